"""autocast: every row of the C policy table (output dtype, and bit-equality with the op run by
hand on inputs cast to the target dtype), PyTorch parity of output dtypes, the region's state
semantics, the weight-cast cache, custom_fwd/custom_bwd, and the ported PyTorch autocast tests
(pytorch-amp.md §4, 19-33) that apply on one device. CPU always; CUDA too when it is available."""
import threading

import numpy as np
import pytest
import torch

import ampc
import ampc.nn.functional as F
from ampc import _C

DEVICES = ["cpu"] + (["cuda"] if ampc.cuda.is_available() else [])
LP = {"fp16": (ampc.float16, torch.float16), "bf16": (ampc.bfloat16, torch.bfloat16)}


class _AmpcNS:
    """ampc under torch's names, so one lambda serves both libraries."""

    class F:
        def __getattr__(self, name):
            return getattr(F, name, None) or getattr(_C, name)

    F = F()

    def __getattr__(self, name):
        return getattr(ampc, name)


class _TorchNS:
    F = torch.nn.functional

    def __getattr__(self, name):
        return getattr(torch, name)


AM, TO = _AmpcNS(), _TorchNS()

# ---------------------------------------------------------------------------- the case table
# A case: (inputs, fn). An input is (kind, shape, (low, high)) with kind "f32" (a float32 input),
# "lp" (the region's lower-precision dtype) or "idx<n>" (int64 in [0, n)). fn(m, *tensors) uses
# torch's API, so it runs on ampc and on torch alike.


def f(shape, lo=-2.0, hi=2.0):
    return ("f32", shape, (lo, hi))


def lp(shape, lo=-2.0, hi=2.0):
    return ("lp", shape, (lo, hi))


def idx(shape, n):
    return ("idx%d" % n, shape, None)


CASES = {
    # lower precision: float32 inputs in, region dtype out
    "conv1d": [([f((2, 3, 8)), f((4, 3, 3)), f((4,))], lambda m, x, w, b: m.F.conv1d(x, w, b, padding=1))],
    "conv2d": [([f((2, 3, 6, 6)), f((4, 3, 3, 3)), f((4,))], lambda m, x, w, b: m.F.conv2d(x, w, b, padding=1))],
    "conv3d": [([f((2, 3, 4, 4, 3)), f((4, 3, 3, 3, 2)), f((4,))], lambda m, x, w, b: m.F.conv3d(x, w, b, padding=1))],
    "conv_transpose1d": [([f((2, 3, 5)), f((3, 4, 3)), f((4,))],
                          lambda m, x, w, b: m.F.conv_transpose1d(x, w, b, stride=2))],
    "conv_transpose2d": [([f((2, 3, 4, 4)), f((3, 4, 3, 3)), f((4,))],
                          lambda m, x, w, b: m.F.conv_transpose2d(x, w, b, stride=2, padding=1))],
    "conv_transpose3d": [([f((1, 3, 2, 3, 2)), f((3, 2, 2, 2, 2)), f((2,))],
                          lambda m, x, w, b: m.F.conv_transpose3d(x, w, b, stride=2))],
    "linear": [([f((3, 5)), f((4, 5)), f((4,))], lambda m, x, w, b: m.F.linear(x, w, b)),
               ([f((2, 3, 5)), f((4, 5))], lambda m, x, w: m.F.linear(x, w))],
    "matmul": [([f((3, 4, 5)), f((5, 2))], lambda m, a, b: m.matmul(a, b)),
               ([f((3, 4)), f((4, 2))], lambda m, a, b: a @ b)],
    "mm": [([f((3, 4)), f((4, 2))], lambda m, a, b: m.mm(a, b)),
           ([f((4, 3)), f((4, 2))], lambda m, a, b: a.t().mm(b))],
    "mv": [([f((3, 4)), f((4,))], lambda m, a, v: m.mv(a, v))],
    "bmm": [([f((2, 3, 4)), f((2, 4, 5))], lambda m, a, b: m.bmm(a, b))],
    "addmm": [([f((3, 5)), f((3, 4)), f((4, 5))], lambda m, c, a, b: m.addmm(c, a, b))],
    "baddbmm": [([f((2, 3, 5)), f((2, 3, 4)), f((2, 4, 5))], lambda m, c, a, b: m.baddbmm(c, a, b))],
    "einsum": [([f((2, 3, 4)), f((2, 4, 5))], lambda m, a, b: m.einsum("bij,bjk->bik", a, b))],
    "prelu": [([f((2, 3, 4)), f((3,))], lambda m, x, w: m.F.prelu(x, w))],  # issue 13, act
    "scaled_dot_product_attention": [
        ([f((2, 3, 4, 8)), f((2, 3, 4, 8)), f((2, 3, 4, 8))], lambda m, q, k, v: m.F.scaled_dot_product_attention(q, k, v))],
    # float32: region-dtype inputs in, float32 out
    "exp": [([lp((3, 4))], lambda m, x: m.exp(x)), ([lp((3, 4))], lambda m, x: x.exp())],
    "log": [([lp((3, 4), 0.1, 3.0)], lambda m, x: m.log(x))],
    "reciprocal": [([lp((3, 4), 0.5, 3.0)], lambda m, x: m.reciprocal(x)),
                   ([lp((3, 4), 0.5, 3.0)], lambda m, x: 1.0 / x)],  # __rtruediv__
    "rsqrt": [([lp((3, 4), 0.1, 3.0)], lambda m, x: m.rsqrt(x))],
    "pow": [([lp((3, 4), 0.1, 2.0), lp((3, 4))], lambda m, x, y: m.pow(x, y)),  # pow.Tensor_Tensor
            ([lp((3, 4), 0.1, 2.0)], lambda m, x: m.pow(x, 2.5)),  # pow.Tensor_Scalar
            ([lp((3, 4))], lambda m, x: x ** 3),
            ([lp((3, 4))], lambda m, x: 2.0 ** x)],  # pow.Scalar
    "softplus": [([lp((3, 4))], lambda m, x: m.F.softplus(x))],
    "layer_norm": [([lp((3, 8)), lp((8,)), lp((8,))], lambda m, x, w, b: m.F.layer_norm(x, (8,), w, b)),
                   ([lp((3, 8)), f((8,)), f((8,))], lambda m, x, w, b: m.F.layer_norm(x, (8,), w, b))],
    "group_norm": [([lp((2, 4, 3)), lp((4,)), lp((4,))], lambda m, x, w, b: m.F.group_norm(x, 2, w, b))],
    "rms_norm": [([lp((3, 8)), lp((8,))], lambda m, x, w: m.F.rms_norm(x, (8,), w)),  # issue 13, poolnorm
                 ([lp((3, 8)), f((8,))], lambda m, x, w: m.F.rms_norm(x, (8,), w, 1e-6))],
    "norm": [([lp((3, 4))], lambda m, x: x.norm()), ([lp((3, 4))], lambda m, x: m.norm(x, p=1, dim=1))],
    "nll_loss": [([lp((4, 5), -3.0, -0.1), idx((4,), 5)], lambda m, x, t: m.F.nll_loss(x, t))],
    "cross_entropy": [([lp((4, 5)), idx((4,), 5)], lambda m, x, t: m.F.cross_entropy(x, t))],
    "l1_loss": [([lp((3, 4)), lp((3, 4))], lambda m, x, y: m.F.l1_loss(x, y))],
    "smooth_l1_loss": [([lp((3, 4)), lp((3, 4))], lambda m, x, y: m.F.smooth_l1_loss(x, y))],
    "mse_loss": [([lp((3, 4)), lp((3, 4))], lambda m, x, y: m.F.mse_loss(x, y))],
    "binary_cross_entropy_with_logits": [
        ([lp((3, 4)), lp((3, 4), 0.0, 1.0)], lambda m, x, y: m.F.binary_cross_entropy_with_logits(x, y))],
    "logsumexp": [([lp((3, 4))], lambda m, x: m.logsumexp(x, 1))],
    "ctc_loss": [([lp((6, 2, 4), -3.0, -0.1), idx((2, 2), 3)],  # issue 13, loss
                  lambda m, x, t: m.F.ctc_loss(x, t + 1, [6, 5], [2, 1], reduction="none"))],
    "pdist": [([lp((5, 3))], lambda m, x: m.F.pdist(x))],  # issue 13, loss
    # issue 12: torch's CUDA fp32 list
    "acos": [([lp((3, 4), -0.9, 0.9)], lambda m, x: m.acos(x)), ([lp((3, 4), -0.9, 0.9)], lambda m, x: x.arccos())],
    "asin": [([lp((3, 4), -0.9, 0.9)], lambda m, x: m.asin(x))],
    "cosh": [([lp((3, 4))], lambda m, x: m.cosh(x))],
    "sinh": [([lp((3, 4))], lambda m, x: x.sinh())],
    "tan": [([lp((3, 4), -1.0, 1.0)], lambda m, x: m.tan(x))],
    "log1p": [([lp((3, 4), 0.0, 3.0)], lambda m, x: m.log1p(x))],
    "expm1": [([lp((3, 4))], lambda m, x: m.expm1(x))],
    "log2": [([lp((3, 4), 0.1, 3.0)], lambda m, x: m.log2(x))],
    "log10": [([lp((3, 4), 0.1, 3.0)], lambda m, x: m.log10(x))],
    "erfinv": [([lp((3, 4), -0.9, 0.9)], lambda m, x: m.erfinv(x))],
    # float32 through the dtype argument
    "softmax": [([lp((3, 4))], lambda m, x: m.F.softmax(x, dim=1))],
    "log_softmax": [([lp((3, 4))], lambda m, x: m.F.log_softmax(x, dim=1))],
    "sum": [([lp((3, 4))], lambda m, x: x.sum()), ([lp((3, 4))], lambda m, x: m.sum(x, 1))],
    "prod": [([lp((3, 4), 0.5, 1.5)], lambda m, x: x.prod()), ([lp((3, 4), 0.5, 1.5)], lambda m, x: x.prod(1))],
    "cumsum": [([lp((3, 4))], lambda m, x: x.cumsum(1))],
    "cumprod": [([lp((3, 4), 0.5, 1.5)], lambda m, x: x.cumprod(1)), ([lp((3, 4))], lambda m, x: m.cumprod(x, 0))],  # issue 12
    # promote: mixed float32 / region dtype in, float32 out (both orders); all region dtype stays
    "atan2": [([f((3, 4)), lp((3, 4))], lambda m, a, b: m.atan2(a, b)),
              ([lp((3, 4)), f((3, 4))], lambda m, a, b: m.atan2(a, b)),
              ([lp((3, 4)), lp((3, 4))], lambda m, a, b: m.atan2(a, b))],
    "dot": [([f((5,)), lp((5,))], lambda m, a, b: m.dot(a, b)),
            ([lp((5,)), f((5,))], lambda m, a, b: m.dot(a, b)),
            ([lp((5,)), lp((5,))], lambda m, a, b: m.dot(a, b))],
    "index_put": [([f((5, 3)), idx((2,), 5), lp((2, 3))], lambda m, x, i, v: x.index_put((i,), v)),
                  ([lp((5, 3)), idx((2,), 5), f((2, 3))], lambda m, x, i, v: x.index_put((i,), v))],
    "scatter_add": [([f((3, 4)), idx((3, 4), 3), lp((3, 4))], lambda m, x, i, s: m.scatter_add(x, 0, i, s)),
                    ([lp((3, 4)), idx((3, 4), 3), f((3, 4))], lambda m, x, i, s: m.scatter_add(x, 0, i, s))],
    "_thnn_fused_lstm_cell": [([f((3, 8)), f((3, 8)), f((3, 2)), f((8,)), f((8,))],  # issue 13: rnn
                               lambda m, a, b, c, d, e: _thnn(m, "_thnn_fused_lstm_cell")(a, b, c, d, e)[0])],
    "_thnn_fused_gru_cell": [([f((3, 6)), f((3, 6)), f((3, 2)), f((6,)), f((6,))],  # issue 13: rnn
                              lambda m, a, b, c, d, e: _thnn(m, "_thnn_fused_gru_cell")(a, b, c, d, e)[0])],
    # banned under CUDA; float32 on the CPU (PyTorch's CPU list)
    "binary_cross_entropy": [([lp((3, 4), 0.05, 0.95), lp((3, 4), 0.0, 1.0)],
                              lambda m, x, y: m.F.binary_cross_entropy(x, y))],
    # on torch's CPU lists only (fp32 / promote): core/autocast_cpu.c
    "avg_pool3d": [([lp((1, 2, 4, 4, 4))], lambda m, x: m.F.avg_pool3d(x, 2))],
    "max_pool3d": [([lp((1, 2, 4, 4, 4))], lambda m, x: m.F.max_pool3d(x, 2))],
    "adaptive_avg_pool3d": [([lp((1, 2, 4, 4, 4))], lambda m, x: m.F.adaptive_avg_pool3d(x, 2))],
    "adaptive_max_pool3d": [([lp((1, 2, 4, 4, 4))], lambda m, x: m.F.adaptive_max_pool3d(x, 2))],
    "quantile": [([lp((10,)), f((3,), 0.1, 0.9)], lambda m, x, q: m.quantile(x, q))],
    "fractional_max_pool2d": [([lp((1, 2, 6, 6)), lp((1, 2, 2), 0.0, 1.0)], lambda m, x, s: m.F.fractional_max_pool2d(
        x, 2, output_size=(3, 3), _random_samples=s))],
    "fractional_max_pool3d": [([lp((1, 2, 6, 6, 6)), lp((1, 2, 3), 0.0, 1.0)], lambda m, x, s: m.F.fractional_max_pool3d(
        x, 2, output_size=(3, 3, 3), _random_samples=s))],
    "cat": [([f((2, 3)), lp((2, 3))], lambda m, a, b: m.cat([a, b])),
            ([lp((2, 3)), lp((2, 3))], lambda m, a, b: m.cat([a, b], 1))],
    "stack": [([lp((2, 3)), f((2, 3))], lambda m, a, b: m.stack([a, b]))],
    "index_copy": [([f((5, 3)), idx((1,), 5), lp((1, 3))], lambda m, x, i, v: x.index_copy(0, i, v))],
}

CASE_IDS = [(name, k) for name in CASES for k in range(len(CASES[name]))]
# (name, k, device): the cases of the rows that have a policy on that device type
POLICY_CASE_IDS = [(name, k, d) for d in ["cpu"] + (["cuda"] if ampc.cuda.is_available() else [])
                   for name, k in CASE_IDS if name in _C._autocast_policy_table(d)]


def make_inputs(specs, seed):
    rng = np.random.default_rng(seed)
    out = []
    for kind, shape, rng_range in specs:
        if kind.startswith("idx"):
            out.append((kind, rng.integers(0, int(kind[3:]), size=shape).astype(np.int64)))
        else:
            out.append((kind, rng.uniform(*rng_range, size=shape).astype(np.float32)))
    return out


def to_ampc(inputs, lp_dtype, device):
    ts = []
    for kind, a in inputs:
        t = ampc.tensor(a)
        if kind == "lp":
            t = t.to(lp_dtype)
        ts.append(t.to(device) if device != "cpu" else t)
    return ts


def to_torch(inputs, lp_dtype):
    return [torch.from_numpy(a).to(lp_dtype) if kind == "lp" else torch.from_numpy(a) for kind, a in inputs]


def widest(ts):
    dts = {t.dtype for t in ts if t.is_floating_point()}
    return ampc.float32 if ampc.float32 in dts or len(dts) > 1 else dts.pop()


def hand_cast(policy, ts, lp_dtype, device):
    """The inputs as the policy casts them, cast by hand (outside any region)."""
    target = {"lower_precision_fp": lp_dtype, "fp32": ampc.float32, "fp32_set_opt_dtype": ampc.float32,
              "banned": ampc.float32, "promote": widest(ts)}[policy]
    return [t.to(target) if t.is_floating_point() and t.dtype != ampc.float64 else t for t in ts], target


def bits(t):
    a = t.detach().cpu().float().numpy()
    return np.ascontiguousarray(a).view(np.uint32)


def test_every_policy_row_has_a_case():
    table = set(_C._autocast_policy_table("cuda")) | set(_C._autocast_policy_table("cpu"))
    assert set(table) == set(CASES), "rows without a case: %s; cases without a row: %s" % (
        sorted(set(table) - set(CASES)), sorted(set(CASES) - set(table)))


@pytest.mark.parametrize("lp_name", list(LP))
@pytest.mark.parametrize("name,k,device", POLICY_CASE_IDS)
def test_policy_row(name, k, lp_name, device):
    # the device's own policy: torch's CUDA lists on CUDA, torch's CPU lists on the CPU (None: none)
    policy = _C._autocast_policy_table(device)[name]
    lp_dtype = LP[lp_name][0]
    specs, fn = CASES[name][k]
    ts = to_ampc(make_inputs(specs, seed=hash((name, k)) % 2**32), lp_dtype, device)
    if policy == "banned" and device == "cuda":
        with ampc.autocast(device, dtype=lp_dtype):
            with pytest.raises(RuntimeError, match="are unsafe to autocast"):
                fn(AM, *ts)
        return
    cast, target = hand_cast(policy, ts, lp_dtype, device)
    with ampc.autocast(device, dtype=lp_dtype):
        assert _C.is_autocast_enabled(device)
        out = fn(AM, *ts)
    assert not _C.is_autocast_enabled(device)
    expected = fn(AM, *cast)
    assert out.dtype == target == expected.dtype
    assert out.shape == expected.shape
    np.testing.assert_array_equal(bits(out), bits(expected))


# Every row's CPU behaviour against torch's CPU autocast (ampc follows torch's CPU lists there:
# csrc/core/autocast_cpu.c); only the fused RNN cells are left out, which torch has as CUDA kernels only.
TORCH_CUDA_ONLY = {"_thnn_fused_lstm_cell", "_thnn_fused_gru_cell"}


def _thnn(m, name):  # issue 13: rnn (torch has the fused cells as torch.ops.aten.* only, CUDA kernels only)
    return getattr(_C, name) if m is AM else getattr(torch.ops.aten, name)


@pytest.mark.parametrize("lp_name", list(LP))
@pytest.mark.parametrize("name,k", [c for c in CASE_IDS if c[0] not in TORCH_CUDA_ONLY])
def test_policy_row_matches_torch_cpu_autocast(name, k, lp_name):
    lp_dtype, torch_lp = LP[lp_name]
    specs, fn = CASES[name][k]
    inputs = make_inputs(specs, seed=7)
    try:
        with torch.autocast("cpu", dtype=torch_lp):
            ref = fn(TO, *to_torch(inputs, torch_lp))
    except RuntimeError:  # e.g. dot of fp32 and fp16 inputs: not promoted on torch's CPU list
        with ampc.autocast("cpu", dtype=lp_dtype):
            with pytest.raises(RuntimeError):
                fn(AM, *to_ampc(inputs, lp_dtype, "cpu"))
        return
    with ampc.autocast("cpu", dtype=lp_dtype):
        out = fn(AM, *to_ampc(inputs, lp_dtype, "cpu"))
    assert str(out.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    tol = 2e-2 if out.dtype != ampc.float32 else 1e-3
    np.testing.assert_allclose(out.detach().float().numpy(), ref.detach().float().numpy(), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------- eligibility

def test_explicit_dtype_is_honoured():
    x = ampc.randn(3, 4).half()
    with ampc.autocast("cpu", dtype=ampc.float16):
        assert x.sum(dtype=ampc.float16).dtype == ampc.float16
        assert x.sum(dtype=ampc.float64).dtype == ampc.float64
        assert x.cumsum(0, dtype=ampc.float16).dtype == ampc.float16
        assert F.softmax(x, 1, dtype=ampc.float16).dtype == ampc.float16
        assert x.norm(dtype=ampc.float64).dtype == ampc.float64


def test_in_place_and_out_are_not_cast():
    x = ampc.rand(3, 4).half() + 0.5
    with ampc.autocast("cpu", dtype=ampc.float16):
        y = x.clone()
        y.exp_()
        assert y.dtype == ampc.float16
        y.pow_(2)
        assert y.dtype == ampc.float16
    np.testing.assert_array_equal(bits(y), bits((x.float().exp().half().float() ** 2).half()))


@pytest.mark.parametrize("dtype", [ampc.float64, ampc.int32])
def test_autocast_ignored_types(dtype):
    # test_autocast_ignored_types: non-eligible inputs keep their dtype
    a = ampc.tensor(np.random.default_rng(0).integers(1, 4, size=(3, 3))).to(dtype)
    ops = [lambda t: ampc.mm(t, t), lambda t: t.pow(2), lambda t: t.sum()]
    if dtype == ampc.float64:
        ops.append(lambda t: t.norm())
    for op in ops:
        plain = op(a)
        with ampc.autocast("cpu", dtype=ampc.float16):
            assert op(a).dtype == plain.dtype
    with ampc.autocast("cpu", dtype=ampc.float16):
        with pytest.raises(RuntimeError, match="same dtype"):
            ampc.mm(ampc.randn(3, 3).double(), ampc.randn(3, 3).half())


def test_python_numbers_are_not_cast():
    x = ampc.randn(4).half()
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        assert (x + 1.5).dtype == ampc.float16  # add: no row, wrapped number keeps promotion
        assert (x * 2).dtype == ampc.float16


@pytest.mark.parametrize("M", [ampc, torch], ids=["ampc", "torch"])
def test_promote_mixed_lower_precision_types_raise(M):
    # PyTorch's promote_type: a lower-precision type other than the region's is an error (cat is
    # on the CPU's promote list; dot is not there, so bf16 dots run as called)
    with M.autocast("cpu", dtype=M.float16):
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType in at::autocast::prioritize"):
            M.cat([M.randn(4).bfloat16(), M.randn(4).bfloat16()])
        assert M.dot(M.randn(4).bfloat16(), M.randn(4).bfloat16()).dtype == M.bfloat16


def test_builtin_promote():
    # test_autocast_torch_expect_builtin_promote / methods: no rows, native type promotion
    a, h = ampc.randn(3, 4), ampc.randn(3, 4).half()
    with ampc.autocast("cpu", dtype=ampc.float16):
        for op in (ampc.eq, ampc.ge, ampc.gt, ampc.le, ampc.lt, ampc.ne):
            assert op(a, h).dtype == ampc.bool
        assert (a == h).dtype == ampc.bool
        for op in (ampc.add, ampc.div, ampc.mul):
            assert op(a, h).dtype == ampc.float32
        assert (a + h).dtype == (h * a).dtype == (h / a).dtype == ampc.float32
        assert ampc.cat([a, h]).dtype == ampc.float32
        assert ampc.stack([h, a]).dtype == ampc.float32
        assert ampc.cat([h, h]).dtype == ampc.float16


# ---------------------------------------------------------------------------- state semantics

def test_nesting_disable_and_dtype_switch():
    a = ampc.randn(4, 4)
    assert not ampc.is_autocast_enabled("cpu")
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        assert ampc.mm(a, a).dtype == ampc.bfloat16
        with ampc.autocast("cpu", enabled=False):
            assert not ampc.is_autocast_enabled("cpu")
            assert ampc.mm(a, a).dtype == ampc.float32
        assert ampc.is_autocast_enabled("cpu")
        with ampc.autocast("cpu", dtype=ampc.float16):
            assert ampc.get_autocast_dtype("cpu") == ampc.float16
            assert ampc.mm(a, a).dtype == ampc.float16
        assert ampc.get_autocast_dtype("cpu") == ampc.bfloat16
        assert ampc.mm(a, a).dtype == ampc.bfloat16
    assert not ampc.is_autocast_enabled("cpu")
    assert ampc.mm(a, a).dtype == ampc.float32


def test_exit_restores_state_on_exception():
    with pytest.raises(KeyError):
        with ampc.autocast("cpu", dtype=ampc.float16, cache_enabled=False):
            raise KeyError("x")
    assert not ampc.is_autocast_enabled("cpu")
    assert ampc.get_autocast_dtype("cpu") == ampc.bfloat16
    assert ampc.is_autocast_cache_enabled()


def test_decorator_and_legacy_aliases():
    a = ampc.randn(2, 2)

    @ampc.autocast("cpu", dtype=ampc.float16)
    def f(x):
        return ampc.mm(x, x)

    assert f(a).dtype == ampc.float16
    assert not ampc.is_autocast_enabled("cpu")
    with ampc.cpu.amp.autocast():
        assert ampc.mm(a, a).dtype == ampc.bfloat16
    with ampc.amp.autocast("cpu", dtype=ampc.float16):
        assert ampc.mm(a, a).dtype == ampc.float16


def test_reentrant_same_instance_is_safe():
    # PyTorch keeps the saved state on the instance, so recursion corrupts it; ampc keeps a stack
    ac = ampc.autocast("cpu", dtype=ampc.float16)
    seen = []

    @ac
    def recurse(n):
        seen.append(ampc.is_autocast_enabled("cpu"))
        if n:
            recurse(n - 1)
        seen.append(ampc.mm(ampc.ones(2, 2), ampc.ones(2, 2)).dtype)

    recurse(3)
    assert seen[:4] == [True] * 4 and seen[4:] == [ampc.float16] * 4
    assert not ampc.is_autocast_enabled("cpu")
    with ac:
        with ac:
            pass
        assert ampc.is_autocast_enabled("cpu")
    assert not ampc.is_autocast_enabled("cpu")


def test_thread_local():
    a = ampc.randn(3, 3)
    seen = {}

    def worker():
        seen["enabled"] = ampc.is_autocast_enabled("cpu")
        seen["dtype"] = ampc.mm(a, a).dtype
        with ampc.autocast("cpu", dtype=ampc.float16):
            seen["inner"] = ampc.mm(a, a).dtype

    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert ampc.mm(a, a).dtype == ampc.bfloat16
    assert seen == {"enabled": False, "dtype": ampc.float32, "inner": ampc.float16}


def test_constructor_errors_and_warnings():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ampc.autocast(0)
    with pytest.raises(RuntimeError, match="device type at start of device string: tpu"):
        ampc.autocast("tpu")  # torch 2.13: not a device type at all
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xpu'"):
        ampc.autocast("xpu")  # a device type ampc has no backend for
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
        ac = ampc.autocast("cpu", dtype=ampc.float64)
    with ac:
        assert not ampc.is_autocast_enabled("cpu")
    if not ampc.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
            ampc.autocast("cuda")
    assert ampc.amp.is_autocast_available("cpu") and not ampc.amp.is_autocast_available("xpu")


def test_autocast_fast_dtype():
    # test_autocast_fast_dtype
    assert ampc.get_autocast_gpu_dtype() == ampc.float16
    assert ampc.get_autocast_cpu_dtype() == ampc.bfloat16
    assert ampc.get_autocast_dtype("cuda") == ampc.float16
    assert ampc.get_autocast_dtype("cpu") == ampc.bfloat16


# ---------------------------------------------------------------------------- weight cache

def _weight(*shape, seed=0):
    w = ampc.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    w.requires_grad_(True)
    return w


def test_cache_once_per_outermost_region():
    x, w = ampc.randn(3, 4), _weight(4, 4)
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        y = ampc.mm(x, w)
        assert _C._autocast_cache_size() == 1
        with ampc.autocast("cpu", dtype=ampc.bfloat16):
            y2 = x @ w
            y3 = F.linear(x, w.t())  # w.t() is a view: never cached
        assert _C._autocast_cache_size() == 1  # the inner exit does not clear
        assert y.grad_fn is not None
        (y.float().sum() + y2.float().sum() + y3.float().sum()).backward()
    assert _C._autocast_cache_size() == 0
    assert w.grad is not None and w.grad.dtype == ampc.float32
    # the reference: each mm's grad is x^T @ ones, computed in bf16 and accumulated in fp32
    assert np.isfinite(w.grad.numpy()).all()


def test_cache_disabled_and_non_leaves_not_cached():
    x, w = ampc.randn(3, 4), _weight(4, 4)
    with ampc.autocast("cpu", dtype=ampc.float16, cache_enabled=False):
        ampc.mm(x, w)
        assert _C._autocast_cache_size() == 0
    with ampc.autocast("cpu", dtype=ampc.float16):
        ampc.mm(x, w * 2)  # not a leaf
        ampc.mm(x, w.detach())  # does not require grad
        assert _C._autocast_cache_size() == 0
        ampc.clear_autocast_cache()


def test_no_grad_cast_never_reused_for_a_graph():
    # PyTorch issues #65766/#112583/#158232: a cast cached under no_grad has no history
    x, w = ampc.randn(3, 4), _weight(4, 4)
    with ampc.autocast("cpu", dtype=ampc.float16):
        with ampc.no_grad():
            ampc.mm(x, w)
        assert _C._autocast_cache_size() == 0
        y = ampc.mm(x, w)
        assert y.requires_grad
        y.float().sum().backward()
    ref = x.numpy().T @ np.ones((3, 4), np.float32)
    np.testing.assert_allclose(w.grad.numpy(), ref, rtol=1e-2, atol=1e-2)


def test_cache_no_memory_growth():
    # test_autocast_cache_leak, plus grad mode, over 50 iterations
    lin = ampc.nn.Linear(10, 10)
    data = ampc.randn(4, 10)
    with ampc.autocast("cpu", dtype=ampc.float16):
        with ampc.no_grad():
            out = lin(data)
            first = _C._cpu_memory_stats()["allocated"]
            for _ in range(3):
                out = lin(data)
            assert _C._cpu_memory_stats()["allocated"] == first
            assert _C._autocast_cache_size() == 0
    del out

    def allocated():
        return _C._cpu_memory_stats()["allocated"]

    readings = []
    for i in range(50):
        with ampc.autocast("cpu", dtype=ampc.float16):
            loss = lin(data).float().sum()
            assert _C._autocast_cache_size() == 2  # weight and bias, each cast once
        loss.backward()
        lin.weight.grad = None
        lin.bias.grad = None
        del loss
        readings.append(allocated())
    assert readings[-1] == readings[10], readings


def test_cache_entry_is_used_for_backward_autocast():
    # test_cast_cache_is_global (single thread): forward and a backward under autocast cast once
    x, w = ampc.randn(3, 4), _weight(4, 4)
    with ampc.autocast("cpu", dtype=ampc.float16):
        y = ampc.mm(x, w)
        c1 = _C._autocast_cache_size()
        y.float().sum().backward()
        ampc.mm(x, w)
        assert _C._autocast_cache_size() == c1 == 1


# ---------------------------------------------------------------------------- custom_fwd / custom_bwd

class MyMM(ampc.autograd.Function):
    @staticmethod
    @ampc.amp.custom_fwd(device_type="cpu")
    def forward(ctx, a, b):
        assert a.dtype == b.dtype == ampc.float32
        assert ampc.is_autocast_enabled("cpu")
        ctx.save_for_backward(a, b)
        return a.mm(b)

    @staticmethod
    @ampc.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        assert ampc.is_autocast_enabled("cpu")
        a, b = ctx.saved_tensors
        return grad.mm(b.t()), a.t().mm(grad)


@pytest.mark.parametrize("lp_name", list(LP))
def test_autocast_custom_enabled(lp_name):
    lp_dtype = LP[lp_name][0]
    a, b = _weight(4, 4, seed=1), _weight(4, 4, seed=2)
    with ampc.autocast("cpu", dtype=lp_dtype):
        out = MyMM.apply(a, b)
        assert out.dtype == lp_dtype
        out.sum().backward()
    assert a.grad.dtype == b.grad.dtype == ampc.float32  # accumulated into the fp32 leaves


class MyMMCast(ampc.autograd.Function):
    @staticmethod
    @ampc.amp.custom_fwd(device_type="cpu", cast_inputs=ampc.float32)
    def forward(ctx, a, container, expect_type):
        b = container[1][0]
        assert a.dtype == b.dtype == expect_type
        assert not ampc.is_autocast_enabled("cpu")
        ctx.save_for_backward(a, b)
        return a.mm(b)

    @staticmethod
    @ampc.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        assert not ampc.is_autocast_enabled("cpu")
        a, b = ctx.saved_tensors
        return grad.mm(b.t()), None, None


def test_autocast_custom_cast_inputs():
    a = ampc.randn(4, 4).half().requires_grad_(True)
    b = ampc.randn(4, 4).half().requires_grad_(True)
    with ampc.autocast("cpu", dtype=ampc.float16):
        out = MyMMCast.apply(a, (0, {0: b}), ampc.float32)
        assert out.dtype == ampc.float32
        out.sum().backward()
    assert a.grad.dtype == ampc.float16
    out = MyMMCast.apply(a, (0, {0: b}), ampc.float16)  # outside autocast: no cast
    assert out.dtype == ampc.float16


def test_custom_fwd_records_ctx():
    class Probe(ampc.autograd.Function):
        @staticmethod
        @ampc.amp.custom_fwd(device_type="cpu")
        def forward(ctx, x):
            Probe.ctx = ctx
            return x * 2

        @staticmethod
        @ampc.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            return g * 2

    x = ampc.randn(3).requires_grad_(True)
    with ampc.autocast("cpu", dtype=ampc.float16):
        Probe.apply(x)
    assert Probe.ctx._fwd_used_autocast is True and Probe.ctx._dtype == ampc.float16
    Probe.apply(x)
    assert Probe.ctx._fwd_used_autocast is False and Probe.ctx._dtype == ampc.bfloat16


# ---------------------------------------------------------------------------- fp16 really overflows

def test_fp16_autocast_overflows_like_fp16():
    a = ampc.full((2, 2), 300.0)
    with ampc.autocast("cpu", dtype=ampc.float16):
        y = ampc.mm(a, a)  # 2 * 300 * 300 = 180000 > 65504
    assert y.dtype == ampc.float16 and np.isinf(y.float().numpy()).all()
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        assert np.isfinite(ampc.mm(a, a).float().numpy()).all()


def test_backward_reaches_fp32_master_weights_through_casts():
    x = ampc.randn(5, 4)
    w = _weight(4, 3)
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        y = F.linear(x, w.t())
        loss = F.mse_loss(y, ampc.zeros(5, 3))
    assert y.dtype == ampc.bfloat16 and loss.dtype == ampc.float32
    loss.backward()
    xt = torch.from_numpy(x.numpy())
    wt = torch.from_numpy(w.detach().numpy()).requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        yt = torch.nn.functional.linear(xt, wt.t())
    torch.nn.functional.mse_loss(yt.float(), torch.zeros(5, 3)).backward()
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=2e-2, atol=2e-2)


def test_cache_keyed_by_dtype_across_a_nested_switch():
    # PyTorch keys its cache by tensor only, so a bf16 region nested in an fp16 one would get the
    # fp16 cast back; ampc keys by tensor and dtype
    x, w = ampc.randn(3, 4), _weight(4, 4)
    with ampc.autocast("cpu", dtype=ampc.float16):
        assert ampc.mm(x, w).dtype == ampc.float16
        with ampc.autocast("cpu", dtype=ampc.bfloat16):
            y = ampc.mm(x, w)
            assert y.dtype == ampc.bfloat16
        assert _C._autocast_cache_size() == 2
        y.float().sum().backward()
    assert w.grad is not None and w.grad.dtype == ampc.float32


def test_autocast_cat_of_cpu_tensors_in_a_cuda_region():
    # test_autocast_cat_jit: CPU tensors under CUDA autocast are ineligible and must not crash
    previous = _C.is_autocast_enabled("cuda")
    _C.set_autocast_enabled("cuda", True)
    try:
        a, h = ampc.randn(2, 3), ampc.randn(2, 3).half()
        assert ampc.cat([a, h]).dtype == ampc.float32
        assert ampc.stack([h, h]).dtype == ampc.float16
        assert ampc.mm(a, a.t()).dtype == ampc.float32  # CPU tensors: the CUDA region does not apply
    finally:
        _C.set_autocast_enabled("cuda", previous)
