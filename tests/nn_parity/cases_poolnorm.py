"""Parity cases of issue 13's pooling and normalisation part: the 1-d and 3-d pools, adaptive max
pools, power-average pools, unpooling, BatchNorm3d, SyncBatchNorm, the instance norms, RMSNorm and
LocalResponseNorm, modules and nn.functional functions."""
import torch

from nn_parity.spec import Case, Const, X, Xc

F = "nn.functional."
LOW = ("float32", "float64", "float16", "bfloat16")


def _f(name):
    return lambda M: getattr(M.nn.functional, name)


def _lib(x):
    import ampc
    return torch if isinstance(x, torch.Tensor) else ampc


def _unpool_call(n, **pool_kw):
    """Calls an unpool module or function on the pooled values and indices of x (same library)."""
    def call(f, x, **kw):
        pool = getattr(_lib(x).nn.functional, f"max_pool{n}d")
        y, ind = pool(x, 2, return_indices=True, **pool_kw)
        return f(y, ind, **kw)
    return call


def _unpool_fn(n):
    def call(f, x, **kw):
        y, ind = getattr(_lib(x).nn.functional, f"max_pool{n}d")(x, 2, return_indices=True)
        return f(y, ind, 2, **kw)
    return call


CASES = [
    # ---------------------------------------------------------------- pooling modules
    Case("nn.MaxPool1d", lambda M: M.nn.MaxPool1d(3, stride=2, padding=1, dilation=2, ceil_mode=True),
         [X((2, 3, 11))]),
    Case("nn.MaxPool1d", lambda M: M.nn.MaxPool1d(2, return_indices=True), [X((3, 8))], id="nn.MaxPool1d-indices"),
    Case("nn.MaxPool3d", lambda M: M.nn.MaxPool3d(2), [X((2, 3, 4, 6, 4))], dtypes=LOW),
    Case("nn.MaxPool3d", lambda M: M.nn.MaxPool3d((2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(2, 1, 1),
                                                  ceil_mode=True, return_indices=True),
         [X((3, 5, 7, 6))], id="nn.MaxPool3d-unbatched-dilated-ceil"),
    Case("nn.AvgPool1d", lambda M: M.nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), [X((2, 3, 10))]),
    Case("nn.AvgPool3d", lambda M: M.nn.AvgPool3d(3, stride=2, padding=1), [X((2, 2, 5, 6, 7))]),  # torch: no CPU fp16
    Case("nn.AvgPool3d", lambda M: M.nn.AvgPool3d((2, 2, 3), stride=1, padding=(1, 0, 1), ceil_mode=True,
                                                  count_include_pad=False, divisor_override=5),
         [X((2, 4, 5, 6))], id="nn.AvgPool3d-unbatched-divisor"),
    Case("nn.AdaptiveAvgPool1d", lambda M: M.nn.AdaptiveAvgPool1d(4), [X((2, 3, 11))]),
    Case("nn.AdaptiveAvgPool3d", lambda M: M.nn.AdaptiveAvgPool3d((2, None, 3)), [X((2, 3, 5, 4, 7))], dtypes=LOW),
    Case("nn.AdaptiveMaxPool1d", lambda M: M.nn.AdaptiveMaxPool1d(4, return_indices=True), [X((2, 3, 11))]),
    Case("nn.AdaptiveMaxPool2d", lambda M: M.nn.AdaptiveMaxPool2d((3, None)), [X((2, 3, 7, 5))], dtypes=LOW),
    Case("nn.AdaptiveMaxPool2d", lambda M: M.nn.AdaptiveMaxPool2d(4, return_indices=True), [X((3, 9, 6))],
         id="nn.AdaptiveMaxPool2d-unbatched-indices"),
    Case("nn.AdaptiveMaxPool3d", lambda M: M.nn.AdaptiveMaxPool3d((2, 3, 2)), [X((2, 2, 5, 7, 4))]),
    Case("nn.LPPool1d", lambda M: M.nn.LPPool1d(2, 3, stride=2), [X((2, 3, 9), 0.1, 1.0)]),
    # norm types whose 1 / p is exact: ampc's pow backward holds a non-representable scalar exponent
    # less precisely than torch in float64 (x.pow(1 / 3): 1e-8 relative)
    Case("nn.LPPool2d", lambda M: M.nn.LPPool2d(4, (2, 3)), [X((2, 3, 6, 7), 0.1, 1.0)]),
    Case("nn.LPPool3d", lambda M: M.nn.LPPool3d(2, 2, stride=1), [X((2, 2, 4, 4, 3), 0.1, 1.0)]),
    Case("nn.MaxUnpool1d", lambda M: M.nn.MaxUnpool1d(2), [X((2, 3, 8))], call=_unpool_call(1)),
    Case("nn.MaxUnpool2d", lambda M: M.nn.MaxUnpool2d(2), [X((2, 3, 7, 6))], call=_unpool_call(2),
         kwargs=dict(output_size=(7, 6))),
    Case("nn.MaxUnpool3d", lambda M: M.nn.MaxUnpool3d(2), [X((1, 2, 4, 6, 4))], call=_unpool_call(3)),
    Case("nn.FractionalMaxPool2d", lambda M: M.nn.FractionalMaxPool2d(
        (2, 3), output_size=(4, 5), _random_samples=M.tensor([[[0.3, 0.7]] * 3, [[0.9, 0.1]] * 3])),
         [X((2, 3, 9, 11))]),
    Case("nn.FractionalMaxPool3d", lambda M: M.nn.FractionalMaxPool3d(
        2, output_ratio=0.5, return_indices=True, _random_samples=M.tensor([[[0.2, 0.5, 0.8]] * 2])),
         [X((2, 8, 6, 7))], id="nn.FractionalMaxPool3d-unbatched-ratio"),
    # ---------------------------------------------------------------- normalisation modules
    Case("nn.BatchNorm3d", lambda M: M.nn.BatchNorm3d(3), [X((2, 3, 3, 4, 2))], train=True),
    Case("nn.BatchNorm3d", lambda M: M.nn.BatchNorm3d(3, momentum=None, affine=False), [X((2, 3, 2, 3, 2))],
         id="nn.BatchNorm3d-eval-noaffine"),
    Case("nn.SyncBatchNorm", lambda M: M.nn.SyncBatchNorm(4), [X((3, 4, 5))], train=True),
    Case("nn.SyncBatchNorm", lambda M: M.nn.SyncBatchNorm.convert_sync_batchnorm(
        M.nn.Sequential(M.nn.BatchNorm1d(3), M.nn.Sequential(M.nn.Tanh(), M.nn.Linear(3, 2)))), [X((5, 3))],
         train=True,
         id="nn.SyncBatchNorm-convert"),
    Case("nn.InstanceNorm1d", lambda M: M.nn.InstanceNorm1d(3), [X((2, 3, 7))]),
    Case("nn.InstanceNorm1d", lambda M: M.nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
         [X((3, 7))], train=True, id="nn.InstanceNorm1d-unbatched-tracked"),
    Case("nn.InstanceNorm2d", lambda M: M.nn.InstanceNorm2d(4, affine=True), [X((2, 4, 5, 3))], dtypes=LOW),
    Case("nn.InstanceNorm2d", lambda M: M.nn.InstanceNorm2d(2, track_running_stats=True, momentum=0.3),
         [X((3, 2, 4, 4))], train=True, id="nn.InstanceNorm2d-tracked-train"),
    Case("nn.InstanceNorm3d", lambda M: M.nn.InstanceNorm3d(2, affine=True, track_running_stats=True),
         [X((2, 2, 3, 4, 3))], id="nn.InstanceNorm3d-eval-running"),
    Case("nn.InstanceNorm3d", lambda M: M.nn.InstanceNorm3d(2), [X((2, 2, 3, 4, 3))]),
    Case("nn.RMSNorm", lambda M: M.nn.RMSNorm(6), [X((3, 4, 6))], dtypes=LOW),
    Case("nn.RMSNorm", lambda M: M.nn.RMSNorm((4, 6), eps=1e-3, elementwise_affine=False), [X((3, 4, 6))],
         id="nn.RMSNorm-2d-noaffine"),
    Case("nn.LocalResponseNorm", lambda M: M.nn.LocalResponseNorm(3, alpha=0.5, beta=0.5, k=2.0), [X((2, 5, 4, 3))]),
    Case("nn.LocalResponseNorm", lambda M: M.nn.LocalResponseNorm(2), [X((2, 5, 4))], id="nn.LocalResponseNorm-3d"),
    Case("nn.CrossMapLRN2d", lambda M: M.nn.CrossMapLRN2d(3, alpha=0.5, beta=0.5, k=2), [X((2, 5, 3, 4))]),
    Case("nn.CrossMapLRN2d", lambda M: M.nn.CrossMapLRN2d(4), [X((2, 6, 2, 3))], id="nn.CrossMapLRN2d-even"),
    # ---------------------------------------------------------------- functional
    Case(F + "max_pool1d", _f("max_pool1d"), [X((2, 3, 9)), Const(3)], kwargs=dict(stride=2, padding=1)),
    Case(F + "max_pool3d", _f("max_pool3d"), [X((1, 2, 5, 5, 6)), Const(3)], kwargs=dict(stride=2, padding=1)),
    Case(F + "max_pool1d_with_indices", _f("max_pool1d_with_indices"), [X((2, 3, 9)), Const(2)]),
    Case(F + "max_pool2d_with_indices", _f("max_pool2d_with_indices"), [X((2, 3, 6, 7)), Const(3)],
         kwargs=dict(stride=2, ceil_mode=True)),
    Case(F + "max_pool3d_with_indices", _f("max_pool3d_with_indices"), [X((2, 4, 4, 6)), Const(2)]),
    Case(F + "avg_pool1d", _f("avg_pool1d"), [X((2, 3, 9)), Const(4)], kwargs=dict(stride=2, ceil_mode=True)),
    Case(F + "avg_pool3d", _f("avg_pool3d"), [X((1, 2, 5, 5, 6)), Const(2)], kwargs=dict(padding=1)),
    Case(F + "adaptive_avg_pool1d", _f("adaptive_avg_pool1d"), [X((3, 10)), Const(3)]),
    Case(F + "adaptive_avg_pool3d", _f("adaptive_avg_pool3d"), [X((2, 6, 5, 7)), Const((2, 3, 4))]),
    Case(F + "adaptive_max_pool1d", _f("adaptive_max_pool1d"), [X((2, 3, 10)), Const(4)]),
    Case(F + "adaptive_max_pool2d", _f("adaptive_max_pool2d"), [X((2, 3, 7, 6)), Const((2, 4))]),
    Case(F + "adaptive_max_pool3d", _f("adaptive_max_pool3d"), [X((2, 2, 5, 4, 6)), Const(2)],
         kwargs=dict(return_indices=True)),
    Case(F + "adaptive_max_pool1d_with_indices", _f("adaptive_max_pool1d_with_indices"), [X((2, 3, 10)), Const(3)]),
    Case(F + "adaptive_max_pool2d_with_indices", _f("adaptive_max_pool2d_with_indices"),
         [X((2, 3, 7, 6)), Const(3)]),
    Case(F + "adaptive_max_pool3d_with_indices", _f("adaptive_max_pool3d_with_indices"),
         [X((2, 5, 4, 6)), Const((3, 2, 2))]),
    Case(F + "lp_pool1d", _f("lp_pool1d"), [X((2, 3, 9), 0.1, 1.0), Const(2), Const(3)]),
    Case(F + "lp_pool2d", _f("lp_pool2d"), [X((2, 3, 6, 6), 0.1, 1.0), Const(2.0), Const(2)]),
    Case(F + "lp_pool3d", _f("lp_pool3d"), [X((1, 2, 4, 4, 4), 0.1, 1.0), Const(2), Const(2)],
         kwargs=dict(stride=1)),
    Case(F + "max_unpool1d", _f("max_unpool1d"), [X((2, 3, 9))], call=_unpool_fn(1), kwargs=dict(output_size=(9,))),
    Case(F + "max_unpool2d", _f("max_unpool2d"), [X((3, 6, 4))], call=_unpool_fn(2)),
    Case(F + "max_unpool3d", _f("max_unpool3d"), [X((1, 2, 4, 5, 4))], call=_unpool_fn(3),
         kwargs=dict(output_size=(1, 2, 4, 5, 4))),
    Case(F + "fractional_max_pool2d", _f("fractional_max_pool2d"),
         [X((2, 3, 8, 9)), Const(3), Const((4, 5)), Const(None), Const(False), Xc((2, 3, 2), 0, 1)]),
    Case(F + "fractional_max_pool3d", _f("fractional_max_pool3d"),
         [X((1, 2, 6, 7, 5)), Const(2), Const(None), Const(0.6), Const(True), Xc((1, 2, 3), 0, 1)]),
    Case(F + "fractional_max_pool2d_with_indices", _f("fractional_max_pool2d_with_indices"),
         [X((3, 7, 7)), Const((2, 2)), Const(3), Const(None), Const(False), Xc((1, 3, 2), 0, 1)]),
    Case(F + "fractional_max_pool3d_with_indices", _f("fractional_max_pool3d_with_indices"),
         [X((2, 1, 5, 5, 6)), Const(2), Const((2, 3, 4)), Const(None), Const(False), Xc((3, 1, 3), 0, 1)]),
    Case(F + "instance_norm", _f("instance_norm"), [X((2, 3, 5)), Xc((3,)), Xc((3,), 0.5, 1.5), X((3,)), X((3,))],
         kwargs=dict(use_input_stats=True, momentum=0.2)),
    Case(F + "instance_norm", _f("instance_norm"), [X((2, 3, 4, 4)), Xc((3,)), Xc((3,), 0.5, 1.5)],
         kwargs=dict(use_input_stats=False), id="nn.functional.instance_norm-running"),
    Case(F + "rms_norm", _f("rms_norm"), [X((3, 5)), Const((5,)), X((5,))], dtypes=LOW),
    Case(F + "rms_norm", _f("rms_norm"), [X((2, 3, 4)), Const((3, 4)), Const(None), Const(1e-2)],
         id="nn.functional.rms_norm-2d-noweight"),
    Case(F + "local_response_norm", _f("local_response_norm"), [X((2, 6, 3, 2, 2)), Const(4)]),
]
