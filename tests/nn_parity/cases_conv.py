"""Parity cases of issue 13's convolution family: padding (every mode and module), ..."""
from nn_parity.spec import Case, Const, X

F = "nn.functional."
LOW = ("float32", "float64", "float16", "bfloat16")


def _f(name):
    return lambda M: getattr(M.nn.functional, name)


def _m(name, *args):
    return lambda M: getattr(M.nn, name)(*args)


CASES = [
    # ---------------------------------------------------------------- padding
    Case(F + "pad", _f("pad"), [X((2, 3, 5)), Const((2, 3))], kwargs=dict(mode="reflect"), dtypes=LOW,
         id="conv-pad-reflect-1d"),
    Case(F + "pad", _f("pad"), [X((2, 3, 5, 4)), Const((1, 3, 2, 0))], kwargs=dict(mode="reflect"), dtypes=LOW,
         id="conv-pad-reflect-2d"),
    Case(F + "pad", _f("pad"), [X((1, 2, 3, 4, 5)), Const((1, 2, 2, 0, 1, 1))], kwargs=dict(mode="reflect"),
         id="conv-pad-reflect-3d"),
    Case(F + "pad", _f("pad"), [X((3, 5, 4)), Const((3, -1, 2, 4))], kwargs=dict(mode="replicate"), dtypes=LOW,
         id="conv-pad-replicate-2d-unbatched-crop"),
    Case(F + "pad", _f("pad"), [X((2, 2, 3, 3, 2)), Const((4, 1, 0, 2, 1, 3))], kwargs=dict(mode="replicate"),
         id="conv-pad-replicate-3d"),
    Case(F + "pad", _f("pad"), [X((2, 3, 5)), Const((3, -2))], kwargs=dict(mode="circular"), id="conv-pad-circular-1d"),
    Case(F + "pad", _f("pad"), [X((2, 3, 4, 5)), Const((2, 1, 4, 3))], kwargs=dict(mode="circular"), dtypes=LOW,
         id="conv-pad-circular-2d"),
    Case(F + "pad", _f("pad"), [X((1, 2, 3, 4, 2)), Const((1, 2, 3, 0, 1, 2))], kwargs=dict(mode="circular"),
         id="conv-pad-circular-3d"),
    Case(F + "pad", _f("pad"), [X((2, 1, 2, 3, 2)), Const((1, 0, 0, 2, 1, 1, 2, 0, 1, 1))],
         kwargs=dict(value=-1.5), dtypes=LOW, id="conv-pad-constant-5dims"),
    Case(F + "pad", _f("pad"), [X((2, 3, 4)), Const((-1, -2, 1, 0))], id="conv-pad-constant-crop"),
    Case("nn.ZeroPad1d", _m("ZeroPad1d", (1, 2)), [X((2, 3, 4))]),
    Case("nn.ZeroPad2d", _m("ZeroPad2d", 2), [X((2, 3, 4, 3))], dtypes=LOW),
    Case("nn.ZeroPad3d", _m("ZeroPad3d", (1, 0, 2, 1, 0, 1)), [X((1, 2, 2, 3, 2))]),
    Case("nn.ConstantPad1d", _m("ConstantPad1d", 2, 3.5), [X((3, 4))]),
    Case("nn.ConstantPad2d", _m("ConstantPad2d", (1, 0, -1, 2), -1.0), [X((2, 3, 4, 3))], dtypes=LOW),
    Case("nn.ConstantPad3d", _m("ConstantPad3d", 1, 0.25), [X((1, 2, 2, 3, 2))]),
    Case("nn.ReflectionPad1d", _m("ReflectionPad1d", (3, 1)), [X((2, 3, 4))], dtypes=LOW),
    Case("nn.ReflectionPad2d", _m("ReflectionPad2d", 2), [X((2, 3, 4, 3))], dtypes=LOW),
    Case("nn.ReflectionPad3d", _m("ReflectionPad3d", (1, 0, 2, 1, 0, 1)), [X((2, 2, 3, 2))]),
    Case("nn.ReplicationPad1d", _m("ReplicationPad1d", (3, 1)), [X((2, 3, 4))], dtypes=LOW),
    Case("nn.ReplicationPad2d", _m("ReplicationPad2d", (2, 0, 1, 3)), [X((3, 4, 3))], dtypes=LOW),
    Case("nn.ReplicationPad3d", _m("ReplicationPad3d", 2), [X((1, 2, 2, 3, 2))]),
    Case("nn.CircularPad1d", _m("CircularPad1d", (3, 1)), [X((2, 3, 4))]),
    Case("nn.CircularPad2d", _m("CircularPad2d", (2, 0, 1, 3)), [X((3, 4, 3))]),
    Case("nn.CircularPad3d", _m("CircularPad3d", 1), [X((1, 2, 2, 3, 2))]),
]

CASES += [
    # ---------------------------------------------------------------- convolution: padding modes, 3-d
    Case("nn.Conv1d", lambda M: M.nn.Conv1d(3, 4, 3, padding=2, padding_mode="reflect"), [X((2, 3, 7))],
         id="conv-Conv1d-reflect"),
    Case("nn.Conv1d", lambda M: M.nn.Conv1d(2, 4, 4, padding="same", padding_mode="circular", groups=2),
         [X((2, 2, 6))], id="conv-Conv1d-same-circular"),
    Case("nn.Conv2d", lambda M: M.nn.Conv2d(3, 4, 3, stride=2, padding=(1, 2), padding_mode="replicate"),
         [X((2, 3, 7, 6))], dtypes=LOW, id="conv-Conv2d-replicate"),
    Case("nn.Conv2d", lambda M: M.nn.Conv2d(2, 2, (3, 2), padding=1, padding_mode="circular", dilation=(2, 1)),
         [X((1, 2, 6, 5))], id="conv-Conv2d-circular"),
    Case("nn.Conv2d", lambda M: M.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), [X((2, 5, 5))],
         id="conv-Conv2d-reflect-unbatched"),
    Case("nn.Conv3d", lambda M: M.nn.Conv3d(3, 4, 3, padding=1), [X((2, 3, 4, 5, 6))], dtypes=LOW),
    Case("nn.Conv3d", lambda M: M.nn.Conv3d(4, 6, (2, 3, 1), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1),
                                            groups=2, bias=False), [X((2, 4, 5, 7, 6))], id="conv-Conv3d-strided-groups"),
    Case("nn.Conv3d", lambda M: M.nn.Conv3d(2, 2, 2, padding="same", padding_mode="replicate"), [X((2, 3, 4, 5))],
         id="conv-Conv3d-same-replicate-unbatched"),
    Case("nn.Conv3d", lambda M: M.nn.Conv3d(3, 2, 1), [X((2, 3, 2, 3, 4))], id="conv-Conv3d-pointwise"),
    Case(F + "conv3d", _f("conv3d"), [X((1, 2, 4, 4, 3)), X((3, 2, 2, 2, 2)), X((3,))], kwargs=dict(stride=(1, 2, 1))),
    # ---------------------------------------------------------------- transposed convolution
    Case("nn.ConvTranspose1d", lambda M: M.nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1),
         [X((2, 3, 5))], dtypes=LOW),
    Case("nn.ConvTranspose1d", lambda M: M.nn.ConvTranspose1d(4, 6, 2, groups=2, dilation=3, bias=False),
         [X((4, 5))], id="conv-ConvTranspose1d-groups-unbatched"),
    Case("nn.ConvTranspose2d", lambda M: M.nn.ConvTranspose2d(4, 3, 4, stride=2, padding=1), [X((2, 4, 3, 4))],
         dtypes=LOW),
    Case("nn.ConvTranspose2d", lambda M: M.nn.ConvTranspose2d(4, 6, (3, 2), stride=(3, 2), padding=(1, 0),
                                                              output_padding=(2, 1), groups=2, dilation=(1, 2)),
         [X((2, 4, 3, 3))], id="conv-ConvTranspose2d-all"),
    Case("nn.ConvTranspose2d", lambda M: M.nn.ConvTranspose2d(3, 2, 1), [X((2, 3, 3, 2))],
         id="conv-ConvTranspose2d-pointwise"),
    Case("nn.ConvTranspose3d", lambda M: M.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1, output_padding=(1, 0, 1)),
         [X((2, 2, 2, 3, 2))], dtypes=LOW),
    Case("nn.ConvTranspose3d", lambda M: M.nn.ConvTranspose3d(2, 4, (1, 2, 2), groups=2, dilation=2),
         [X((2, 2, 3, 2))], id="conv-ConvTranspose3d-groups-unbatched"),
    Case(F + "conv_transpose1d", _f("conv_transpose1d"), [X((2, 3, 4)), X((3, 2, 3)), X((2,))],
         kwargs=dict(stride=2, output_padding=1)),
    Case(F + "conv_transpose2d", _f("conv_transpose2d"), [X((1, 4, 3, 3)), X((4, 1, 2, 3))],
         kwargs=dict(stride=(2, 1), padding=(0, 1), groups=2)),
    Case(F + "conv_transpose3d", _f("conv_transpose3d"), [X((1, 2, 2, 3, 2)), X((2, 3, 2, 2, 2)), X((3,))],
         kwargs=dict(stride=2, padding=1, dilation=(1, 2, 1))),
]

CASES += [
    # ---------------------------------------------------------------- fold / unfold, shuffles
    Case("nn.Unfold", lambda M: M.nn.Unfold(2, dilation=(1, 2), padding=1, stride=(2, 1)), [X((2, 3, 5, 6))],
         dtypes=LOW),
    Case("nn.Unfold", lambda M: M.nn.Unfold((3, 2)), [X((2, 4, 5))], id="conv-Unfold-unbatched"),
    Case("nn.Fold", lambda M: M.nn.Fold((5, 6), 2, dilation=(1, 2), padding=1, stride=(2, 1)), [X((2, 12, 18))],
         dtypes=LOW),
    Case("nn.Fold", lambda M: M.nn.Fold(4, 3, padding=1), [X((18, 16))], id="conv-Fold-unbatched"),
    Case(F + "unfold", _f("unfold"), [X((1, 2, 4, 4)), Const(3)], kwargs=dict(padding=1)),
    Case(F + "fold", _f("fold"), [X((1, 8, 9)), Const((4, 4)), Const(2)], kwargs=dict(stride=1)),
    Case("nn.PixelShuffle", _m("PixelShuffle", 2), [X((2, 8, 3, 2))], dtypes=LOW),
    Case("nn.PixelShuffle", _m("PixelShuffle", 3), [X((2, 2, 9, 2, 1))], id="conv-PixelShuffle-5d"),
    Case("nn.PixelUnshuffle", _m("PixelUnshuffle", 2), [X((2, 3, 4, 6))], dtypes=LOW),
    Case("nn.ChannelShuffle", _m("ChannelShuffle", 3), [X((2, 6, 3, 2))]),
    Case(F + "pixel_shuffle", _f("pixel_shuffle"), [X((12, 2, 3)), Const(2)]),
    Case(F + "pixel_unshuffle", _f("pixel_unshuffle"), [X((1, 2, 6, 3)), Const(3)]),
    Case(F + "channel_shuffle", _f("channel_shuffle"), [X((2, 4, 3)), Const(2)]),
    Case(F + "native_channel_shuffle", _f("native_channel_shuffle"), [X((2, 6, 2, 2)), Const(3)], grad=False),
]


def _interp(**kw):
    return lambda M: (lambda x: M.nn.functional.interpolate(x, **kw))


CASES += [
    # ---------------------------------------------------------------- interpolate
    Case(F + "interpolate", _interp(scale_factor=2.5), [X((2, 3, 5))], dtypes=LOW, id="conv-interp-nearest-1d"),
    Case(F + "interpolate", _interp(size=(7, 3)), [X((2, 3, 4, 5))], dtypes=LOW, id="conv-interp-nearest-2d"),
    Case(F + "interpolate", _interp(scale_factor=(2, 1.5, 0.5)), [X((1, 2, 3, 4, 6))], id="conv-interp-nearest-3d"),
    Case(F + "interpolate", _interp(size=9, mode="nearest-exact"), [X((2, 3, 4))], id="conv-interp-nexact-1d"),
    Case(F + "interpolate", _interp(scale_factor=1.7, mode="nearest-exact"), [X((2, 3, 4, 5))],
         id="conv-interp-nexact-2d"),
    Case(F + "interpolate", _interp(size=(3, 5, 2), mode="nearest-exact"), [X((1, 2, 2, 3, 4))],
         id="conv-interp-nexact-3d"),
    Case(F + "interpolate", _interp(size=11, mode="linear"), [X((2, 3, 4))], dtypes=LOW, id="conv-interp-linear"),
    Case(F + "interpolate", _interp(scale_factor=2.0, mode="linear", align_corners=True), [X((2, 3, 5))],
         id="conv-interp-linear-align"),
    Case(F + "interpolate", _interp(scale_factor=1.7, mode="bilinear"), [X((2, 3, 4, 5))], dtypes=LOW,
         id="conv-interp-bilinear"),
    Case(F + "interpolate", _interp(size=(3, 8), mode="bilinear", align_corners=True), [X((2, 3, 5, 4))],
         id="conv-interp-bilinear-align"),
    Case(F + "interpolate", _interp(scale_factor=0.6, mode="bilinear", recompute_scale_factor=True), [X((1, 2, 7, 6))],
         id="conv-interp-bilinear-down-recompute"),
    Case(F + "interpolate", _interp(scale_factor=(1.5, 2, 0.7), mode="trilinear"), [X((1, 2, 3, 4, 5))],
         id="conv-interp-trilinear"),
    Case(F + "interpolate", _interp(size=(4, 3, 5), mode="trilinear", align_corners=True), [X((2, 1, 3, 2, 4))],
         id="conv-interp-trilinear-align"),
    Case(F + "interpolate", _interp(scale_factor=2.3, mode="bicubic"), [X((2, 3, 4, 5))], id="conv-interp-bicubic"),
    Case(F + "interpolate", _interp(size=(6, 2), mode="bicubic", align_corners=True), [X((1, 2, 4, 5))],
         id="conv-interp-bicubic-align"),
    Case(F + "interpolate", _interp(size=3, mode="area"), [X((2, 3, 7))], id="conv-interp-area-1d"),
    Case(F + "interpolate", _interp(scale_factor=0.5, mode="area"), [X((2, 3, 6, 5))], id="conv-interp-area-2d"),
    Case(F + "interpolate", _interp(size=(2, 3, 2), mode="area"), [X((1, 2, 5, 4, 3))], id="conv-interp-area-3d"),
    Case(F + "upsample", _f("upsample"), [X((1, 2, 3, 4))], kwargs=dict(scale_factor=2, mode="bilinear")),
    Case(F + "upsample_nearest", _f("upsample_nearest"), [X((1, 2, 3, 4))], kwargs=dict(size=(5, 7))),
    Case(F + "upsample_bilinear", _f("upsample_bilinear"), [X((1, 2, 3, 4))], kwargs=dict(scale_factor=2)),
    Case("nn.Upsample", lambda M: M.nn.Upsample(scale_factor=2, mode="bilinear"), [X((2, 3, 4, 5))], dtypes=LOW),
    Case("nn.Upsample", lambda M: M.nn.Upsample(size=(4, 5, 3), mode="trilinear", align_corners=True),
         [X((1, 2, 2, 3, 2))], id="conv-Upsample-trilinear"),
    Case("nn.Upsample", lambda M: M.nn.Upsample(scale_factor=(2.0, 3.0)), [X((1, 2, 3, 2))], id="conv-Upsample-nearest"),
    Case("nn.UpsamplingNearest2d", lambda M: M.nn.UpsamplingNearest2d(scale_factor=3), [X((2, 2, 3, 2))]),
    Case("nn.UpsamplingBilinear2d", lambda M: M.nn.UpsamplingBilinear2d(size=(5, 6)), [X((2, 2, 3, 2))]),
]

CASES += [
    Case(F + "affine_grid", _f("affine_grid"), [X((2, 2, 3)), Const((2, 3, 4, 5))], kwargs=dict(align_corners=False)),
    Case(F + "affine_grid", _f("affine_grid"), [X((1, 3, 4)), Const((1, 2, 3, 2, 4))], kwargs=dict(align_corners=True),
         id="conv-affine_grid-3d-align"),
]

CASES += [
    Case(F + "interpolate", _interp(size=(3, 2), mode="bilinear", antialias=True), [X((2, 3, 8, 7))],
         id="conv-interp-bilinear-aa"),
    Case(F + "interpolate", _interp(scale_factor=(0.4, 1.5), mode="bicubic", antialias=True, align_corners=True),
         [X((1, 2, 9, 4))], id="conv-interp-bicubic-aa"),
]
