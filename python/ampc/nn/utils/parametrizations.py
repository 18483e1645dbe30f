"""nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal as parametrizations
(torch.nn.utils.parametrizations; same state_dict keys: parametrizations.weight.original0/1 for
weight_norm, parametrizations.weight.original plus _u/_v buffers for spectral_norm, original
plus the `base` buffer for orthogonal).

orthogonal's maps are composed from matmuls, as ampc has no matrix_exp or householder_product
kernels: the matrix exponential by scaling and squaring of a degree-18 Taylor polynomial (torch's
degree for fp32/fp64 at the largest norms), the Householder product applied to the first k
columns of the identity (O(n k^2)); both are differentiable through autograd. The QR that makes
a matrix orthogonal at assignment is LAPACK's (NumPy). The Cayley map needs linalg.solve, which
ampc does not have yet: it raises saying so."""
import math
from enum import Enum, auto

from ... import _C
from ...autograd import no_grad
from ..modules.module import Module
from . import parametrize
from ._norms import norm_except_dim, normalize, normalize_into, weight_norm as _weight_norm_fn

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm_fn(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """module.<name> = g * v / ||v||, g = parametrizations.<name>.original0 (the norms) and v =
    original1. Loads the old weight_norm's <name>_g / <name>_v keys too."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs):
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            # start from a good estimate of the top singular vectors
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with no_grad():
            for _ in range(n_power_iterations):
                normalize_into(self._u, _C.mv(weight_mat, self._v), self.eps)
                normalize_into(self._v, _C.mv(weight_mat.t(), self._u), self.eps)

    def forward(self, weight):
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones: the power method updates the buffers in place, backward needs these values
        u = self._u.clone()
        v = self._v.clone()
        sigma = _C.dot(u, _C.mv(weight_mat, v))  # vdot for real tensors
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """module.<name> = W / sigma(W), sigma estimated by power iteration (one step per forward in
    training mode)."""
    from .spectral_norm import _transposed_conv
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ---------------------------------------------------------------- orthogonal

def _eye_like(X, n):
    return _C.eye(n, dtype=X.dtype, device=X.device)


def _matrix_exp(A):
    """exp(A) for (..., n, n): A / 2^s, the Taylor polynomial of degree 18 by Horner's rule, then
    s squarings; s makes the scaled 1-norm at most 3.01 (torch's theta for degree 18 in fp32)."""
    n = A.size(-1)
    with no_grad():
        norm1 = float(A.abs().sum(-2).amax())  # the largest 1-norm of the batch
    s = max(0, math.ceil(math.log2(norm1 / 3.010066362817634))) if norm1 > 0 else 0
    B = A / (2.0 ** s) if s else A
    eye = _eye_like(A, n)
    P = eye + B / 18.0
    for i in range(17, 0, -1):
        P = eye + (B @ P) / float(i)
    for _ in range(s):
        P = P @ P
    return P


def _householder_product(A, tau):
    """torch.linalg.householder_product: the first k columns of H_1 ... H_k, H_i = I - tau_i v_i
    v_i^T, v_i = A's column i below the diagonal with a 1 on it. (..., n, k), (..., k)."""
    n, k = A.size(-2), A.size(-1)
    below = _C.ones(n, k, dtype=A.dtype, device=A.device).tril(-1)
    V = A * below + _eye_like(A, n)[:, :k]  # the Householder vectors, column by column
    X = _eye_like(A, n)[:, :k].expand(*A.shape[:-2], n, k)
    for i in range(k - 1, -1, -1):  # H_1 (H_2 (... (H_k X)))
        v = V[..., :, i:i + 1]  # (..., n, 1)
        X = X - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.transpose(-2, -1) @ X))
    return X


def _make_orthogonal(A):
    """The Q of A's QR with the signs of R's diagonal (geqrf's), so Q is A's orthogonal factor."""
    import numpy as np
    a = A.detach().cpu().numpy()
    q, r = np.linalg.qr(a)
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    q = q * d[..., None, :]
    return _C.from_numpy(np.ascontiguousarray(q)).to(device=A.device, dtype=A.dtype)


def _is_orthogonal(Q, eps=None):
    from ... import allclose, finfo
    n, k = Q.size(-2), Q.size(-1)
    Id = _eye_like(Q, k)
    eps = 10.0 * n * finfo(Q.dtype).eps
    return bool(allclose(Q.transpose(-2, -1) @ Q, Id, atol=eps))


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # a skew-symmetric matrix from X's lower triangle; its exponential is orthogonal
            X = X.tril()
            if n != k:
                X = _C.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.transpose(-2, -1)
            Q = _matrix_exp(A)  # (cayley is refused at registration: no linalg.solve yet)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            # the diagonal's signs (int: torch's X.diagonal().int(), so 0 < |d| < 1 gives 0)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.transpose(-2, -1)
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                                 f"{Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.transpose(-2, -1)
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                raise NotImplementedError("orthogonal(use_trivialization=False, 'householder'): assigning needs "
                                          "geqrf's Householder vectors, which ampc does not expose yet")
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                # complete the n x k matrix to an n x n one with random columns, then orthogonalise
                N = _C.randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(_C.cat([Q, N], dim=-1))
            self.base = Q
            # the map sends -I to I (matrix_exp: exp(0); householder: the signs of -1), so base @ I
            neg_Id = _C.zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """module.<name> becomes an orthogonal (or semi-orthogonal) matrix: the image of an
    unconstrained one under orthogonal_map ("matrix_exp" for square weights, else
    "householder"), times the stored `base` (the trivialization)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
                         f"{orthogonal_map}")
    if orth_enum == _OrthMaps.cayley:  # fail at registration, not at the first forward
        raise NotImplementedError("orthogonal_map='cayley' solves (I - A/2) Q = (I + A/2), and ampc has no "
                                  "linalg.solve yet; use 'matrix_exp' or 'householder'")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
