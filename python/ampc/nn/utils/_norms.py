"""The norms weight_norm and spectral_norm are built from, as torch composes them:
norm_except_dim (torch.norm_except_dim), _weight_norm (torch._weight_norm's composite form,
v * g / ||v||) and normalize (F.normalize: x / max(||x||, eps))."""



def norm_except_dim(v, pow=2, dim=0):
    """The p-norm of v over every dim but `dim`, shaped to broadcast against v (size 1 except
    at dim); dim=-1: the norm of the whole tensor (0-dim), as torch's quirk has it."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        shape = [v.size(0)] + [1] * (v.dim() - 1)
        return v.contiguous().view(v.size(0), -1).norm(pow, 1).view(shape)
    if dim == v.dim() - 1:
        shape = [1] * (v.dim() - 1) + [v.size(-1)]
        return v.contiguous().view(-1, v.size(-1)).norm(pow, 0).view(shape)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def weight_norm(v, g, dim=0):
    """w = g * v / ||v|| with the norm over every dim but `dim`."""
    return v * (g / norm_except_dim(v, 2, dim))


def normalize(x, p=2.0, dim=1, eps=1e-12):
    return x / x.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(x)


def normalize_into(out, x, eps):
    """normalize(x, dim=0, eps) written into `out` in place (F.normalize(..., out=out))."""
    out.copy_(normalize(x, dim=0, eps=eps))
    return out


