"""torch.amp's names, signatures, warnings and errors as torch 2.13 has them (issue 14): the
top-level GradScaler and kernels, the device-type autocast state functions with keywords, the
deprecated per-device getters and the legacy torch.cuda.amp / torch.cpu.amp names with their
warnings, is_autocast_available, torch.backends.mkldnn, Tensor.copy_(number) and the legacy
tensor types. Each check runs the same call in both libraries and compares."""
import inspect
import warnings

import pytest
import torch

import ampc


def _outcome(fn):
    """(result, exception type and message, [(warning category, message)])."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = fn(), None
        except Exception as e:  # noqa: BLE001 - the exception is part of what is compared
            result, error = None, (type(e).__name__, str(e))
    return result, error, [(w.category.__name__, str(w.message).split(" (Triggered internally")[0]) for w in caught]


def _same(build):
    a, t = _outcome(lambda: build(ampc)), _outcome(lambda: build(torch))
    assert a[1] == t[1], (a[1], t[1])
    assert a[2] == t[2], (a[2], t[2])
    return a[0], t[0]


def test_top_level_grad_scaler_and_kernels():
    assert ampc.GradScaler is ampc.amp.GradScaler
    assert callable(ampc._amp_foreach_non_finite_check_and_unscale_) and callable(ampc._amp_update_scale_)
    scale, growth = ampc.tensor([4.0]), ampc.tensor([0], dtype=ampc.int32)
    found = ampc.tensor([1.0])
    ampc._amp_update_scale_(scale, growth, found, 2.0, 0.5, 10)
    assert scale.item() == 2.0 and growth.item() == 0


@pytest.mark.parametrize("call", [
    lambda M: M.is_autocast_enabled(device_type="cpu"), lambda M: M.is_autocast_enabled("cpu"),
    lambda M: M.is_autocast_enabled(), lambda M: str(M.get_autocast_dtype(device_type="cpu")).split(".")[1],
    lambda M: str(M.get_autocast_dtype("cuda")).split(".")[1],
    lambda M: M.is_autocast_enabled("foo"), lambda M: M.is_autocast_enabled(1), lambda M: M.get_autocast_dtype("bar"),
    lambda M: M.set_autocast_enabled(device_type="cpu", enabled=False),
    lambda M: M.set_autocast_dtype(device_type="cpu", dtype=M.bfloat16),
    lambda M: M.amp.is_autocast_available("cpu"), lambda M: M.amp.is_autocast_available("cuda"),
    lambda M: M.amp.is_autocast_available("foo"), lambda M: M.amp.is_autocast_available("meta"),
])
def test_autocast_state_functions_match_torch(call):
    a, t = _same(call)
    assert a == t


@pytest.mark.parametrize("call", [
    lambda M: M.is_autocast_cpu_enabled(), lambda M: str(M.get_autocast_cpu_dtype()).split(".")[1],
    lambda M: str(M.get_autocast_gpu_dtype()).split(".")[1], lambda M: M.set_autocast_cpu_enabled(False),
    lambda M: M.set_autocast_cpu_dtype(M.bfloat16), lambda M: M.set_autocast_gpu_dtype(M.float16),
])
def test_deprecated_per_device_functions_warn_as_torch(call):
    a, t = _same(call)
    assert a == t


@pytest.mark.parametrize("call", [
    lambda M: type(M.cuda.amp.GradScaler(enabled=False)).__name__,
    lambda M: type(M.cpu.amp.GradScaler(enabled=False)).__name__,
    lambda M: type(M.cuda.amp.autocast(enabled=False)).__name__, lambda M: type(M.cpu.amp.autocast()).__name__,
    lambda M: M.cuda.amp.custom_fwd(lambda ctx, x: x).__name__, lambda M: M.cuda.amp.custom_bwd(lambda ctx, g: g).__name__,
    lambda M: type(M.cuda.amp.custom_fwd(cast_inputs=M.float32)).__name__,
    lambda M: M.amp.custom_fwd(lambda ctx, x: x),
])
def test_legacy_amp_names_warn_as_torch(call):
    _same(call)


def test_signatures_match_torch():
    for path in ["amp.custom_fwd", "amp.custom_bwd", "cuda.amp.custom_fwd", "cuda.amp.custom_bwd", "cuda.amp.GradScaler.__init__", "cpu.amp.GradScaler.__init__"]:
        a_obj, t_obj = ampc, torch
        for part in path.split("."):
            a_obj, t_obj = getattr(a_obj, part), getattr(t_obj, part)
        a_params = [(p.name, p.kind, p.default) for p in inspect.signature(a_obj).parameters.values()]
        t_params = [(p.name, p.kind, p.default) for p in inspect.signature(t_obj).parameters.values()]
        assert a_params == t_params, path


def test_backends_mkldnn_switches():
    m = ampc.backends.mkldnn
    assert m.is_available() is False and m.enabled is True and m.VERBOSE_ON == torch.backends.mkldnn.VERBOSE_ON
    with m.flags(enabled=False, deterministic=True):
        assert m.enabled is False and m.deterministic is True
    assert m.enabled is True and m.deterministic is False
    with m.verbose(m.VERBOSE_ON):
        pass


@pytest.mark.parametrize("value", [1.5, 3, True, -0.0])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_copy_from_a_python_number(value, dtype):
    a = ampc.zeros(2, 3, dtype=getattr(ampc, dtype)).copy_(value)
    t = torch.zeros(2, 3, dtype=getattr(torch, dtype)).copy_(value)
    assert a.tolist() == t.tolist()
    with pytest.raises(TypeError, match="must be Tensor, not str"):  # torch names the argument 'other' here
        a.copy_("x")


def test_legacy_tensor_types():
    for name in ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
                 "ByteTensor", "BoolTensor"]:
        a_cls, t_cls = getattr(ampc, name), getattr(torch, name)
        assert repr(a_cls) == repr(t_cls) and repr(ampc.cuda.__dict__[name]) == repr(getattr(torch.cuda, name))
        for args in [(), (2, 3), ([1, 0, 1],), (ampc.Size([2]),)]:
            targs = tuple(torch.Size(x) if isinstance(x, ampc.Size) else x for x in args)
            a, t = a_cls(*args), t_cls(*targs)
            assert tuple(a.shape) == tuple(t.shape) and str(a.dtype)[5:] == str(t.dtype)[6:]
            if args and isinstance(args[0], list):
                assert a.tolist() == t.tolist()
            assert isinstance(a, a_cls) and a.type() == t.type() == repr(t_cls)[8:-2]
        assert not isinstance(ampc.zeros(1, dtype=ampc.float64 if name != "DoubleTensor" else ampc.float32), a_cls)
        assert not isinstance(a_cls(1), ampc.cuda.__dict__[name])
    x = ampc.zeros(2)
    alias = ampc.FloatTensor(x)
    alias[0] = 3.0
    assert x[0].item() == 3.0
    assert ampc.zeros(2).type(ampc.DoubleTensor).dtype == ampc.float64
    with pytest.raises(TypeError, match=r"expected torch.DoubleTensor \(got torch.FloatTensor\)"):
        ampc.DoubleTensor(x)
