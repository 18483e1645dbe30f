"""ampc.testing.assert_close / make_tensor against torch.testing's (issue 18): the same verdict and
the same message (torch's names mapped to ampc's) on 1000 random cases over dtypes, shapes,
perturbations, NaN and inf, tolerances and nested containers, and the documented corner cases."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest
import torch

import ampc
from ampc.testing import assert_close, make_tensor
from helpers import host_exact

DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "bool"]


def _outcome(fn):
    """(exception type name or None, message with torch's names written as ampc's)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is part of the outcome
        return type(e).__name__, str(e).replace("torch.", "ampc.")
    return None, ""


def _random_values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int64", "int32"):
        return rng.integers(-20, 20, size=shape)
    if dtype == "uint8":
        return rng.integers(0, 40, size=shape)
    v = rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e3])
    if rng.random() < 0.2 and v.size:
        v.flat[rng.integers(0, v.size)] = rng.choice([np.nan, np.inf, -np.inf, 0.0])
    return v


def _perturb(rng, v, dtype):
    w = np.array(v, copy=True)
    if not w.size:
        return w
    kind = rng.integers(0, 4)
    k = rng.integers(1, w.size + 1)
    at = rng.choice(w.size, size=k, replace=False)
    if dtype == "bool":
        if kind:
            w.flat[at] = ~w.flat[at]
    elif dtype in ("int64", "int32", "uint8"):
        if kind:
            w.flat[at] = w.flat[at] + rng.integers(1, 3, size=k)
    elif kind == 1:  # tiny: usually within the dtype's tolerance
        w.flat[at] = w.flat[at] * (1 + rng.choice([1e-7, 1e-6, 1e-4, 1e-3, 1e-2]))
    elif kind == 2:
        w.flat[at] = w.flat[at] + rng.standard_normal(k)
    elif kind == 3:
        w.flat[at] = np.nan
    return w


def _pair(values, dtype):
    t = torch.from_numpy(np.asarray(values)).to(getattr(torch, dtype))
    return ampc.tensor(host_exact_of(t), dtype=getattr(ampc, dtype)), t


def host_exact_of(t):
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()


def _draw(rng):
    """One random case: (ampc actual, ampc expected, torch actual, torch expected, kwargs)."""
    shape = [(), (0,), (5,), (3, 4), (2, 3, 2), (1, 7)][rng.integers(0, 6)]
    d_act = DTYPES[rng.integers(0, len(DTYPES))]
    d_exp = d_act if rng.random() < 0.85 else DTYPES[rng.integers(0, len(DTYPES))]
    v = _random_values(rng, shape, d_act)
    w = _perturb(rng, v, d_act)
    aa, ta = _pair(w, d_act)
    ae, te = _pair(v, d_act if d_exp == d_act else d_exp) if d_exp != d_act else _pair(v, d_exp)
    kwargs = {}
    if rng.random() < 0.3:
        kwargs["equal_nan"] = True
    if rng.random() < 0.2:
        r = float(rng.choice([0.0, 1e-5, 1e-2, 0.5]))
        kwargs.update(rtol=r, atol=float(rng.choice([0.0, 1e-5, 1e-2, 1.0])))
    if d_exp != d_act and rng.random() < 0.7:
        kwargs["check_dtype"] = False
    if rng.random() < 0.15:  # nested
        return [aa, {"k": ae}], [ae, {"k": ae}], [ta, {"k": te}], [te, {"k": te}], kwargs
    return aa, ae, ta, te, kwargs


def test_assert_close_matches_torch_on_1000_random_cases():
    rng = np.random.default_rng(18)
    verdicts = {True: 0, False: 0}
    for i in range(1000):
        aa, ae, ta, te, kwargs = _draw(rng)
        got = _outcome(lambda: assert_close(aa, ae, **kwargs))
        want = _outcome(lambda: torch.testing.assert_close(ta, te, **kwargs))
        assert got == want, f"case {i} {kwargs}:\nampc:  {got}\ntorch: {want}"
        verdicts[got[0] is None] += 1
    assert verdicts[True] > 150 and verdicts[False] > 150, verdicts  # both verdicts well exercised


@pytest.mark.parametrize("build", [
    lambda M: (1.0, 1.0 + 1e-9), lambda M: (1.0, 1.1), lambda M: (1, 1.0), lambda M: (True, False),
    lambda M: (None, None), lambda M: (None, 1), lambda M: (float("nan"), float("nan")), lambda M: (1e-10, 1e-9),
    lambda M: ([1, 2], (1, 2)), lambda M: ([1, 2], [1, 2, 3]), lambda M: ("a", "a"), lambda M: ("a", "b"),
    lambda M: (M.tensor([1.0]), np.array([1.0])), lambda M: (np.array([1.0, 2.0]), np.array([1.0, 2.5])),
    lambda M: (OrderedDict(a=M.tensor(1.0), b=2.0), {"b": 2.0, "a": M.tensor(1.0)}),
    lambda M: (M.tensor([1.0, 2.0]), M.tensor([[1.0, 2.0]])),
    lambda M: (M.nn.Parameter(M.tensor([1.0])), M.tensor([1.0])),
    lambda M: (M.tensor(float("inf")), M.tensor(float("inf"))), lambda M: (M.tensor(float("inf")), M.tensor(1.0)),
    lambda M: (M.zeros(3, 4)[:, 1], M.zeros(3)), lambda M: (np.float32(1.0), np.float32(1.5)),
    lambda M: (namedtuple("P", "x y")(1.0, M.tensor([2.0])), (1.0, M.tensor([2.5]))),
], ids=lambda b: "")
@pytest.mark.parametrize("kwargs", [{}, {"check_dtype": False}, {"rtol": 0.0}, {"atol": 1.0, "rtol": 0.0},
                                    {"equal_nan": True}, {"allow_subclasses": False}, {"check_stride": True},
                                    {"msg": "custom"}, {"msg": lambda m: "pre: " + m}])
def test_assert_close_corner_cases_match_torch(build, kwargs):
    got = _outcome(lambda: assert_close(*build(ampc), **kwargs))
    want = _outcome(lambda: torch.testing.assert_close(*build(torch), **kwargs))
    if want[0] == "TypeError":  # "No comparison pair ... of type <class ...>": the class paths differ by library
        assert got[0] == "TypeError" and got[1].startswith("No comparison pair was able to handle inputs of type")
        return
    assert got == want


def test_make_tensor_ranges_shapes_and_errors_match_torch():
    ampc.manual_seed(3)
    torch.manual_seed(3)
    for dtype in DTYPES:
        a = make_tensor(4, 5, dtype=getattr(ampc, dtype), device="cpu")
        t = torch.testing.make_tensor(4, 5, dtype=getattr(torch, dtype), device="cpu")
        assert tuple(a.shape) == tuple(t.shape) and str(a.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        lo, hi = (0, 2) if dtype == "bool" else (0, 10) if dtype == "uint8" else (-9, 10)
        v = host_exact(a)
        assert v.min() >= lo and v.max() < hi
    a = make_tensor((3, 4), dtype=ampc.float32, device="cpu", noncontiguous=True, exclude_zero=True,
                    low=-1, high=1, requires_grad=True)
    assert not a.is_contiguous() and tuple(a.shape) == (3, 4) and a.requires_grad and (host_exact(a) != 0).all()
    assert make_tensor(1, 1, dtype=ampc.float32, device="cpu", noncontiguous=True).is_contiguous()  # one element
    big = make_tensor(1000, dtype=ampc.float16, device="cpu", low=-1e30, high=1e30)  # clamped to fp16's range
    assert np.isfinite(host_exact(big)).all()
    ints = host_exact(make_tensor(2000, dtype=ampc.int64, device="cpu", low=-2.5, high=2.5))
    assert ints.min() == -2 and ints.max() == 2  # both bounds ceiled, high exclusive
    for kwargs in [dict(low=1, high=1, dtype="int64"), dict(low=2, high=1, dtype="float32"),
                   dict(low=float("nan"), dtype="float32"), dict(low=300, high=400, dtype="uint8"),
                   dict(requires_grad=True, dtype="int32"), dict(noncontiguous=True, memory_format=object(),
                                                                  dtype="float32")]:
        dt = kwargs.pop("dtype")
        got = _outcome(lambda: make_tensor(3, dtype=getattr(ampc, dt), device="cpu", **kwargs))
        want = _outcome(lambda: torch.testing.make_tensor(3, dtype=getattr(torch, dt), device="cpu", **kwargs))
        assert got[0] == want[0] == "ValueError", (got, want)
    with pytest.warns(FutureWarning):
        make_tensor(2, dtype=ampc.float32, device="cpu", low=1.0, high=1.0)


def test_make_tensor_draws_torchs_values_under_the_same_seed():
    """The CPU generator is torch's: the same seed gives the same test tensor."""
    for dtype in ("float32", "float64", "int64"):
        ampc.manual_seed(11)
        torch.manual_seed(11)
        a = make_tensor(6, 3, dtype=getattr(ampc, dtype), device="cpu", low=-3, high=3)
        t = torch.testing.make_tensor(6, 3, dtype=getattr(torch, dtype), device="cpu", low=-3, high=3)
        assert np.array_equal(host_exact(a), t.double().numpy() if t.is_floating_point() else t.numpy()), dtype
