"""nn.init: PyTorch's weight initialisations, each an in-place random fill under no_grad.

The formulas (gains, fans, bounds) are PyTorch's and the CPU generator draws torch's numbers
(mt19937, the same per-dtype sampling), so under the same seed a tensor initialised here is bit
for bit the one torch gives (tests/test_nn_utils_more.py checks every function). orthogonal_'s QR
is LAPACK's (ampc.linalg.qr when the build has it, else NumPy's), so it agrees with torch to
rounding, not bit for bit.
"""
import math
import warnings

from .. import _C
from ..autograd import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]
__all__ += ["orthogonal_", "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
            "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]

Tensor = _C.Tensor  # torch.nn.init exposes the name (its annotations)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _random_kwargs(generator):
    return {} if generator is None else {"generator": generator}


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, **_random_kwargs(generator))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, **_random_kwargs(generator))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) restricted to [a, b], by rejection as PyTorch 2.x does: redraw from the
    normal where a wide window keeps most draws, else propose uniformly on [a, b] and accept with
    the normal's density (few draws would land in a narrow window)."""
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    kw = _random_kwargs(generator)
    with no_grad():
        if tensor.numel() == 0:
            return tensor
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if p > 0.3:
            # bounds rounded to the tensor's dtype, so the test below agrees with the stored values
            lo = _C.tensor(a, dtype=tensor.dtype).item()
            hi = _C.tensor(b, dtype=tensor.dtype).item()
            tensor.normal_(mean, std, **kw)
            while True:
                mask = (tensor < lo) | (tensor > hi)
                if not mask.any():
                    break
                tensor.copy_(_C.where(mask, _C.empty_like(tensor).normal_(mean, std, **kw), tensor))
            return tensor
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def rejected(candidates):  # log u > log pdf(x) - log pdf(mode)
            log_pdf = ((candidates - mean) / std).pow(2).mul(-0.5).sub(log_peak)
            return _C.empty_like(candidates).uniform_(0.0, 1.0, **kw).log().gt(log_pdf)

        tensor.uniform_(a, b, **kw)
        pending = rejected(tensor)
        while pending.any():
            candidates = _C.empty_like(tensor).uniform_(a, b, **kw)
            tensor.copy_(_C.where(pending, candidates, tensor))
            pending = pending.logical_and(rejected(candidates))
        return tensor


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(_C.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor, groups=1):
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min_dim):
                index = (g * out_chans_per_grp + d, d) + tuple(s // 2 for s in sizes[2:])
                tensor[index] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return tensor.shape[1] * receptive_field_size, tensor.shape[0] * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std  # torch's order of operations: the bound is bit-exact in float64
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def _qr(a):
    """(Q, R) of a 2-D float tensor, reduced, as torch.linalg.qr."""
    from .. import linalg
    if hasattr(linalg, "qr"):
        return linalg.qr(a)
    if a.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f'"geqrf_cpu" not implemented for \'{str(a.dtype).split(".")[-1].capitalize()}\'')
    import numpy as np
    q, r = np.linalg.qr(a.cpu().numpy())
    return _C.from_numpy(np.ascontiguousarray(q)).to(a.device), _C.from_numpy(np.ascontiguousarray(r)).to(a.device)


def orthogonal_(tensor, gain=1, generator=None):
    """Fills tensor (2-D or more, flattened to (rows, rest)) with a (semi-)orthogonal matrix:
    the Q of the QR of a standard normal matrix, its columns' signs fixed by R's diagonal
    (Mezzadri's recipe, as torch), times gain."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flattened = tensor.new_empty((rows, cols)).normal_(0, 1, **_random_kwargs(generator))
    if rows < cols:
        flattened = flattened.t()
    q, r = _qr(flattened)
    q = q * r.diagonal().sign()
    if rows < cols:
        q = q.t()
    with no_grad():
        tensor.view_as(q).copy_(q)
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fills a 2-D tensor from N(0, std) and zeroes ceil(sparsity * rows) random rows of every
    column (a randperm per column, as torch draws them)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, **_random_kwargs(generator))
        for col_idx in range(cols):
            # the global generator, as torch draws the permutations (only the fill takes `generator`)
            zero_indices = _C.randperm(rows)[:num_zeros]
            tensor[zero_indices, col_idx] = 0
    return tensor


# PyTorch's deprecated names without the trailing underscore
def _deprecated(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
