"""ampc.testing: checks of gradients against finite differences, usable by users too.

gradcheck(fn, inputs) compares the Jacobian that autograd computes (one backward per output
element) with central finite differences (f(x + eps) - f(x - eps)) / (2 eps), perturbing each
element of each input that requires grad in place, so non-contiguous inputs stay as they are.
Use float64 inputs: in float32 the differences are too coarse for the default tolerances.
gradgradcheck(fn, inputs) runs gradcheck on the function that computes the first gradient with
create_graph=True, which checks second derivatives.
"""
import numpy as np

from .. import _C
from ..autograd import enable_grad, grad as autograd_grad, no_grad

from ._comparison import assert_close, default_tolerances  # noqa: E402
from ._creation import make_tensor  # noqa: E402

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError", "assert_close", "make_tensor", "default_tolerances"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck / gradgradcheck when a gradient does not match."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


def _differentiable_outputs(out):
    return tuple(o for o in _as_tuple(out) if _is_tensor(o) and o.dtype.is_floating_point)


def _flat_numpy(t):
    return np.array(t.detach().cpu().numpy(), dtype=np.float64).ravel()


class _HostElements:
    """Element access of a CPU tensor through NumPy (shares its memory, strides included)."""

    def __init__(self, x):
        self.arr = x.detach().numpy()

    def __getitem__(self, idx):
        return self.arr[idx].copy()

    def __setitem__(self, idx, value):
        self.arr[idx] = value


class _DeviceElements:
    """The same for a tensor on another device (a CUDA tensor has no NumPy view): indexed
    reads and in-place writes on a detached alias, one element at a time."""

    def __init__(self, x):
        self.t = x.detach()

    def __getitem__(self, idx):
        return float(self.t[idx])

    def __setitem__(self, idx, value):
        self.t[idx] = float(value)


def _numerical_jacobian(fn, inputs, diff_idx, n_out_elems, eps):
    """J[k][i]: (outputs numel, input i numel) by central differences."""
    jac = []
    for i in diff_idx:
        x = inputs[i]
        arr = _HostElements(x) if x.device.type == "cpu" else _DeviceElements(x)
        cols = np.zeros((sum(n_out_elems), x.numel()), dtype=np.float64)
        for flat, idx in enumerate(np.ndindex(*tuple(x.shape)) if x.dim() else [()]):
            orig = arr[idx]
            arr[idx] = orig + eps
            plus = [_flat_numpy(o) for o in _differentiable_outputs(fn(*inputs))]
            arr[idx] = orig - eps
            minus = [_flat_numpy(o) for o in _differentiable_outputs(fn(*inputs))]
            arr[idx] = orig
            cols[:, flat] = (np.concatenate(plus) - np.concatenate(minus)) / (2 * eps) if plus else 0.0
        jac.append(cols)
    return jac


def _analytical_jacobian(outputs, inputs, diff_idx):
    """The same layout from backward passes with one-hot grad_outputs."""
    diff_inputs = [inputs[i] for i in diff_idx]
    sizes = [o.numel() for o in outputs]
    jac = [np.zeros((sum(sizes), inputs[i].numel()), dtype=np.float64) for i in diff_idx]
    row = 0
    for k, out in enumerate(outputs):
        for j in range(out.numel()):
            grad_outputs = []
            for m, o in enumerate(outputs):
                g = _C.zeros_like(o, device="cpu")  # one-hot built on the host, then moved to o's device
                if m == k:
                    g.numpy().reshape(-1)[j] = 1.0
                grad_outputs.append(g.to(device=o.device))
            grads = autograd_grad(outputs, diff_inputs, grad_outputs, retain_graph=True, allow_unused=True)
            for n, (g, x) in enumerate(zip(grads, diff_inputs)):
                if g is None:
                    continue
                if tuple(g.shape) != tuple(x.shape):
                    raise GradcheckError(f"Gradient has incorrect size: {tuple(g.shape)} for an input of size "
                                         f"{tuple(x.shape)}")
                if g.dtype != x.dtype:
                    raise GradcheckError(f"Gradient has dtype mismatch: {g.dtype} for an input of {x.dtype}")
                jac[n][row, :] = _flat_numpy(g)
            row += 1
    return jac


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **unused):
    """True when autograd's gradients of fn at `inputs` match central finite differences.

    inputs: a tensor or a tuple of tensors (and other arguments); the floating tensors with
    requires_grad=True are checked. On a mismatch raises GradcheckError naming the output, the
    input and the first differing element (or returns False with raise_exception=False)."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype != _C.float64:
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point; gradcheck "
                          f"tolerances assume float64.")
    with enable_grad():
        outputs = _differentiable_outputs(fn(*inputs))
        if not outputs:
            raise GradcheckError("gradcheck: fn returned no floating-point tensor")
        analytical = _analytical_jacobian(outputs, inputs, diff_idx)
        numerical = _numerical_jacobian(fn, inputs, diff_idx, [o.numel() for o in outputs], eps)
    for n, i in enumerate(diff_idx):
        a, num = analytical[n], numerical[n]
        bad = ~(np.abs(a - num) <= atol + rtol * np.abs(num))
        if bad.any():
            r, c = np.argwhere(bad)[0]
            msg = (f"Jacobian mismatch for output 0 with respect to input {i},\n"
                   f"numerical:{num[r, c]!r}\nanalytical:{a[r, c]!r}\n"
                   f"(at output element {r}, input element {c}; {int(bad.sum())} of {bad.size} entries differ)\n"
                   f"numerical Jacobian:\n{num}\nanalytical Jacobian:\n{a}")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  seed=0, **unused):
    """gradcheck of the gradient itself: checks the second derivatives of fn (the graph that
    backward builds with create_graph=True), with respect to the inputs and grad_outputs.
    grad_outputs default to random float64 tensors."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    with enable_grad():
        outputs = _differentiable_outputs(fn(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = tuple(_C.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, device=o.device,
                                       requires_grad=True)
                             for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_grad(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _differentiable_outputs(fn(*ins))
        grads = autograd_grad(outs, [ins[i] for i in diff_idx], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grad, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)

from ._precision import PrecisionReport, assert_precision, compare_precision  # noqa: E402

__all__ += ["compare_precision", "assert_precision", "PrecisionReport"]
