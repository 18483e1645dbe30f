"""nn.functional's losses beyond the core five (issue 13, losses): kl_div, huber_loss,
poisson_nll_loss, gaussian_nll_loss, the margin and embedding losses, multi_margin_loss,
multilabel_(soft_)margin_loss, soft_margin_loss and the triplet losses.

Each is composed of differentiable ampc ops term by term as ATen composes it (Loss.cpp,
LossMultiMargin.cpp, LossMultiLabelMargin.cpp, Distance.cpp; gaussian_nll_loss,
multilabel_soft_margin_loss and triplet_margin_with_distance_loss are Python in torch too), so
values and gradients follow torch's formulas; huber_loss reuses the smooth_l1_loss kernel
(huber = delta * smooth_l1 with beta = delta). The ops torch's autocast lists as fp32 run
their body in fp32 under autocast (`_fp32_under_autocast`), as torch casts their inputs.
"""
import functools
import math
import sys
import warnings

from .. import _C
from . import functional as _F
from ..amp._policy import autocast_policy  # noqa: E402  (torch's autocast lists name these)

__all__ = [
    "kl_div", "huber_loss", "poisson_nll_loss", "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
]


def _ampc():
    return sys.modules["ampc"]


def _reduction_str(reduction, size_average=None, reduce=None):
    """torch's _Reduction.legacy_get_string when a legacy argument is given, else the checked string."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        return "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    """ATen's apply_loss_reduction."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _fp32_under_autocast(devices=("cpu", "cuda")):
    """torch's autocast fp32 policy for a composed op: under autocast on the inputs' device, its
    floating tensors other than float64 are cast to float32 and the body runs with autocast off
    (so its parts are not cast back down)."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            Tensor = _C.Tensor
            dev = next((a.device.type for a in args if isinstance(a, Tensor)), None)
            if dev not in devices or not _C.is_autocast_enabled(dev):
                return fn(*args, **kwargs)

            def cast(a):
                if isinstance(a, Tensor) and a.is_floating_point() and a.dtype != _ampc().float64:
                    return a.float()
                return a
            args = [cast(a) for a in args]
            kwargs = {k: cast(v) for k, v in kwargs.items()}
            with _ampc().autocast(device_type=dev, enabled=False):
                return fn(*args, **kwargs)
        return run
    return wrap


def _size_warning(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """ATen's pairwise_distance: the p-norm of x1 - x2 + eps over the last dim."""
    dim = max(x1.dim(), x2.dim()) - 1
    return _ampc().norm(x1 - x2 + eps, p, dim, keepdim)


# ---------------------------------------------------------------- regression and divergence

@_fp32_under_autocast()
def _kl_div_core(input, target, reduction, log_target):
    if log_target:
        out = _ampc().exp(target) * (target - input)
    else:
        out = _ampc().xlogy(target, target) - target * input
    return _reduce(out, reduction)


@autocast_policy(cuda='fp32', cpu='fp32')
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        red = _reduction_str(reduction, size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        red = "sum" if reduction == "batchmean" else _reduction_str(reduction)
    out = _kl_div_core(input, target, red, bool(log_target))
    if reduction == "batchmean" and input.dim() != 0:
        out = out / input.size()[0]
    return out


def _weighted(loss, weight, reduction, mean_by_weight):
    """torch's weighted mse/l1/huber: loss * weight, mean over the weight's sum (mse, l1) or the count (huber)."""
    out = loss * weight
    if reduction == "none":
        return out
    if reduction == "sum":
        return out.sum()
    if reduction == "mean":
        return out.sum() / weight.sum() if mean_by_weight else out.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def _check_weight(weight, input):
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")


def _weighted_pointwise(kind, input, target, weight, size_average, reduce, reduction):
    """mse_loss / l1_loss with weight, as torch composes them (mean divides by the weights' sum)."""
    if size_average is not None or reduce is not None:
        reduction = _reduction_str(reduction, size_average, reduce)
    _check_weight(weight, input)
    x, t = _ampc().broadcast_tensors(input, target)
    return _weighted((x - t) ** 2 if kind == "mse" else (x - t).abs(), weight, reduction, True)


@autocast_policy(cuda='fp32', cpu='fp32')
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _size_warning(input, target)
    delta = float(delta)
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, t = _ampc().broadcast_tensors(input, target)
    if weight is None:
        red = _F._reduction(reduction)
    else:
        _check_weight(weight, input)
        red = 0
    # smooth_l1 with beta = delta is huber / delta: 0.5 d^2 / delta below delta, d - 0.5 delta above
    loss = _C._nn_pointwise_loss("smooth_l1_loss", x, t, None, None, red, delta)
    if delta != 1.0:
        loss = loss * delta
    return loss if weight is None else _weighted(loss, weight, reduction, False)


@_fp32_under_autocast()
def _poisson_nll_core(input, target, log_input, full, eps, reduction):
    M = _ampc()
    if log_input:
        loss = M.exp(input) - target * input
    else:
        loss = input - target * M.log(input + eps)
    if full:
        stirling = target * M.log(target) - target + 0.5 * M.log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


@autocast_policy(cuda='fp32', cpu='fp32')
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction = _reduction_str(reduction, size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    return _poisson_nll_core(input, target, bool(log_input), bool(full), float(eps), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    M = _ampc()
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * M.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = M.unsqueeze(var, -1)
        elif input.ndim == var.ndim and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with M.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (M.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------- margin and embedding losses

@_fp32_under_autocast()
def _margin_ranking_core(input1, input2, target, margin, reduction):
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@autocast_policy(cuda='fp32', cpu='fp32')
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction_str(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _margin_ranking_core(input1, input2, target, float(margin), reduction)


@_fp32_under_autocast()
def _hinge_embedding_core(input, target, margin, reduction):
    M = _ampc()
    zeros = M.zeros_like(input)
    margin_clamp = (margin - input).clamp_min(0)
    out = M.where(target != 1, margin_clamp, zeros) + M.where(target != -1, input, zeros)
    return _reduce(out, reduction)


@autocast_policy(cuda='fp32', cpu='fp32')
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    return _hinge_embedding_core(input, target, float(margin), _reduction_str(reduction, size_average, reduce))


@_fp32_under_autocast()
def _cosine_embedding_core(input1, input2, target, margin, reduction):
    M = _ampc()
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if td == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod_sum = (input1 * input2).sum(td)
    mag1 = (input1 * input1).sum(td) + eps
    mag2 = (input2 * input2).sum(td) + eps
    cos = prod_sum / (mag1 * mag2).sqrt()
    zeros = M.zeros_like(cos)
    out = M.where(target == 1, 1 - cos, zeros) + M.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(out, reduction)


@autocast_policy(cuda='fp32', cpu='fp32')
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    return _cosine_embedding_core(input1, input2, target, float(margin), _reduction_str(reduction, size_average, reduce))


@_fp32_under_autocast()
def _soft_margin_core(input, target, reduction):
    M = _ampc()
    return _reduce(M.log1p(M.exp(-input * target)), reduction)


@autocast_policy(cuda='fp32', cpu='fp32')
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _soft_margin_core(input, target, _reduction_str(reduction, size_average, reduce))


@_fp32_under_autocast()
def _multi_margin_core(input, target, p, margin, weight, reduction):
    M = _ampc()
    nd = input.dim()
    if nd > 2 or target.dim() > 1 or (nd == 2 and target.dim() != 1):
        raise RuntimeError(f"inconsistent target size, expected {[input.shape[0]] if nd == 2 else []} but got "
                           f"{list(target.shape)}")
    x = input.reshape(1, -1) if nd < 2 else input
    n, c = x.shape
    t = target.reshape(-1)
    if t.numel() != n:
        raise RuntimeError(f"inconsistent target size, expected {[n] if nd == 2 else []} but got {list(target.shape)}")
    if c == 0 and n > 0 or nd == 2 and c == 0:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if n and bool(((t < 0) | (t >= c)).any()):
        raise IndexError(f"multi_margin_loss: target out of range: expected values in [0, {c}), got "
                         f"[{int(t.min())}, {int(t.max())}]")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    idx = t.unsqueeze(1)
    z = M.relu(margin - x.gather(1, idx) + x)                     # (N, C)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.reshape(-1).gather(0, t).unsqueeze(1).to(z.dtype)
    own = M.arange(c, device=x.device).unsqueeze(0) == idx          # the target's own column does not count
    loss = z.masked_fill(own, 0).sum(1) / c
    if nd < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@autocast_policy(cuda='fp32', cpu='fp32')
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction_str(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    return _multi_margin_core(input, target, int(p), float(margin), weight, reduction)


@_fp32_under_autocast()
def _multilabel_margin_core(input, target, reduction):
    M = _ampc()
    nd = input.dim()
    if nd > 2 or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    x = input.reshape(1, -1) if nd < 2 else input
    t = target.reshape(x.shape)
    n, c = x.shape
    if n and c and bool(((t < -1) | (t >= c)).any()):
        raise IndexError(f"multilabel_margin_loss: target out of range: expected values in [-1, {c}), got "
                         f"[{int(t.min())}, {int(t.max())}]")
    valid = (t == -1).long().cumsum(1) == 0                             # (N, C): the labels before the first -1
    tgt = M.where(valid, t, M.zeros_like(t))
    cls = M.arange(c, device=x.device)
    is_target = ((tgt.unsqueeze(2) == cls) & valid.unsqueeze(2)).sum(1) > 0  # (N, C)
    z = M.relu(1 - x.gather(1, tgt).unsqueeze(2) + x.unsqueeze(1))    # (N, label j, class i)
    keep = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = z.masked_fill(~keep, 0).sum((1, 2)) / c if c else x.sum(1)
    if nd < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@autocast_policy(cuda='fp32', cpu='fp32')
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _multilabel_margin_core(input, target, _reduction_str(reduction, size_average, reduce))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction = _reduction_str(reduction, size_average, reduce)
    logsigmoid = _F.logsigmoid if hasattr(_F, "logsigmoid") else (lambda v: -_C.softplus(-v, 1.0, 20.0))
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


# ---------------------------------------------------------------- triplet losses

def _check_triplet_dims(anchor, positive, negative):
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == p and p == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


@_fp32_under_autocast()
def _triplet_margin_core(anchor, positive, negative, margin, p, eps, swap, reduction):
    _check_triplet_dims(anchor, positive, negative)
    d_pos = _pairwise_distance(anchor, positive, p, eps)
    d_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ampc().minimum(d_neg, _pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


@autocast_policy(cuda='fp32', cpu='fp32')
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _reduction_str(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _triplet_margin_core(anchor, positive, negative, float(margin), float(p), float(eps), bool(swap), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    if distance_function is None:
        distance_function = getattr(_ampc(), "pairwise_distance", _pairwise_distance)
    d_pos = distance_function(anchor, positive)
    d_neg = distance_function(anchor, negative)
    if swap:
        d_neg = _ampc().minimum(d_neg, distance_function(positive, negative))
    loss = _ampc().clamp_min(margin + d_pos - d_neg, 0)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------- CTC

def _lengths(v, what):
    """input_lengths / target_lengths (a tensor, list or tuple of ints) as a CPU int64 tensor."""
    M = _ampc()
    if isinstance(v, _C.Tensor):
        if v.is_floating_point() or v.dtype == M.bool or v.is_complex():
            raise RuntimeError(f"{what} must be integral")
        return v.reshape(-1).to(device="cpu", dtype=M.int64).contiguous()
    return M.tensor([int(x) for x in v], dtype=M.int64).reshape(-1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """ATen's ctc_loss over the _ctc_loss kernel (core/nn_loss_ctc.c): zero_infinity's where, then
    mean (each loss over its target length, clamped at 1, then the batch mean) or sum."""
    M = _ampc()
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    tl = _lengths(target_lengths, "target_lengths")
    res = _C._nn_ctc_loss(lp, targets, _lengths(input_lengths, "input_lengths"), tl, int(blank), bool(zero_infinity))
    if zero_infinity:
        res = M.where(res == math.inf, M.zeros((), dtype=res.dtype, device=res.device), res)
    if reduction == "mean":
        return (res / tl.to(device=res.device, dtype=res.dtype).clamp_min(1)).mean()
    if reduction == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)


__all__ += ["ctc_loss"]


# ---------------------------------------------------------------- pdist

def pdist(input, p=2):
    """The p-norm distances of every row pair i < j of input (N, M), row-major: a C kernel
    (core/nn_pdist.c), forward and backward."""
    return _C._nn_pdist(input, float(p))


__all__ += ["pdist"]
