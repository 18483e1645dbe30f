"""ampc._stats: torch's distances and statistics composed of ampc's ops: dist, cdist, pdist, cov,
corrcoef. cdist follows torch's choice between the matmul form (|a|^2 - 2ab + |b|^2, for p=2 and
more than 25 rows) and the direct differences, so values and gradients match torch's."""
import builtins

from . import _C
from ._C import Tensor
from ._composed import _dt, broadcast_shapes
from ._functions import _check_tensor
from .amp._policy import autocast_policy  # noqa: E402  (torch's autocast lists name these)


@autocast_policy(cuda='fp32')
def dist(input, other, p=2):
    _check_tensor("dist", input)
    _check_tensor("dist", other, "other", 2)
    return _C.vector_norm(input - other, p)


@autocast_policy(cuda='fp32', cpu='fp32')
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    _check_tensor("cdist", x1, "x1")
    _check_tensor("cdist", x2, "x2", 2)
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if x1.dim() < 2 else 2} got: "
                           f"{builtins.min(x1.dim(), x2.dim())}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if x1.dtype in (_C.float16, _C.bfloat16) or x2.dtype in (_C.float16, _C.bfloat16):
        raise NotImplementedError(f'"cdist" not implemented for \'{_dt(x1.dtype if x1.dtype in (_C.float16, _C.bfloat16) else x2.dtype)}\'')
    if not x1.is_floating_point() or not x2.is_floating_point():
        raise RuntimeError(f"cdist only supports floating-point dtypes, X{1 if not x1.is_floating_point() else 2} "
                           f"got: {_dt(x1.dtype if not x1.is_floating_point() else x2.dtype)}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    modes = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": True,
             "donot_use_mm_for_euclid_dist": False}
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    a = x1.expand(tuple(batch) + tuple(x1.shape[-2:]))
    b = x2.expand(tuple(batch) + tuple(x2.shape[-2:]))
    use_mm = modes[compute_mode]
    if use_mm is None:
        use_mm = a.shape[-2] > 25 or b.shape[-2] > 25
    if p == 2 and use_mm:
        # torch's formulation: |a|^2 - 2 a.b + |b|^2, clamped at 0 before the sqrt
        a2 = (a * a).sum(-1, keepdim=True)
        b2 = (b * b).sum(-1, keepdim=True)
        d2 = a2 - 2 * _C.matmul(a, b.transpose(-2, -1)) + b2.transpose(-2, -1)
        return _C.clamp_min(d2, 0).sqrt()
    return _C.vector_norm(a.unsqueeze(-2) - b.unsqueeze(-3), p, -1)


def pdist(input, p=2):
    _check_tensor("pdist", input)
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError(f"pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return _C._nn_pdist(input, float(p))  # the C kernel of core/nn_pdist.c (issue 13, loss)


def cov(input, *, correction=1, fweights=None, aweights=None):
    _check_tensor("cov", input)
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    n_obs = x.shape[1]
    if not x.is_floating_point():
        x = x.to(_C.get_default_dtype())
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if wt.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{wt.dim()} dimensions")
        if wt.numel() != n_obs:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {wt.numel()} != {n_obs}")
        if name == "fweights" and wt.is_floating_point():
            raise RuntimeError("cov(): expected fweights to have integral dtype but got fweights with "
                               f"{_dt(wt.dtype)} dtype")
        if name == "aweights" and not wt.is_floating_point():
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{_dt(wt.dtype)} dtype")
        w = wt if w is None else w * wt
    if w is None:
        w_sum = float(n_obs)
        avg = x.mean(1)
    else:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None:
        norm = w_sum - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights.to(x.dtype)).sum() / w_sum
    if isinstance(norm, Tensor):
        norm = _C.clamp_min(norm, 0)
    else:
        norm = builtins.max(norm, 0.0)
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    return (_C.mm(xw, xm.t()) / norm).squeeze()


def corrcoef(input):
    _check_tensor("corrcoef", input)
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = _diag_of(c)
    std = d.sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return _C.clamp(c, -1, 1)


def _diag_of(m):
    """The diagonal of a square matrix as a strided slice of its flat view (diag belongs to the shape ops)."""
    n = m.shape[0]
    return m.reshape(-1)[0:n * n:n + 1]


FUNCTIONS = {name: obj for name, obj in globals().items()
             if callable(obj) and not name.startswith("_") and getattr(obj, "__module__", None) == __name__}
