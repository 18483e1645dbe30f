"""Parity cases of issue 13's family act: the activations, the dropout family (eval mode here; the
random draws are checked against torch's under the same seed in tests/test_act_more.py)."""
from nn_parity.spec import Case, Const, I, Sub, X, Xc

F = "nn.functional."
HALF = ("float32", "float64", "float16", "bfloat16")


def _f(name):
    return lambda M: getattr(M.nn.functional, name)


def _offsets(M, drawn):
    return M.tensor([0, 3, 3, 5])  # an empty bag in the middle


CASES = [
    # ---------------------------------------------------------------- modules
    Case("nn.ELU", lambda M: M.nn.ELU(alpha=0.7), [X((3, 7), -3, 3)], dtypes=HALF),
    Case("nn.SELU", lambda M: M.nn.SELU(), [X((3, 7), -3, 3)], dtypes=HALF),
    Case("nn.CELU", lambda M: M.nn.CELU(alpha=1.5), [X((3, 7), -3, 3)], dtypes=HALF),
    Case("nn.GLU", lambda M: M.nn.GLU(dim=1), [X((3, 6, 2))]),
    Case("nn.Hardtanh", lambda M: M.nn.Hardtanh(-0.5, 0.75), [X((3, 7), -2, 2)], dtypes=HALF),
    Case("nn.ReLU6", lambda M: M.nn.ReLU6(), [X((3, 7), -8, 8)]),
    Case("nn.Threshold", lambda M: M.nn.Threshold(0.2, -3.0), [X((3, 7))]),
    Case("nn.Hardswish", lambda M: M.nn.Hardswish(), [X((3, 7), -5, 5)], dtypes=HALF),
    Case("nn.Hardsigmoid", lambda M: M.nn.Hardsigmoid(), [X((3, 7), -5, 5)], dtypes=HALF),
    Case("nn.LeakyReLU", lambda M: M.nn.LeakyReLU(0.2), [X((3, 7))], dtypes=HALF),
    Case("nn.LogSigmoid", lambda M: M.nn.LogSigmoid(), [X((3, 7), -30, 30)], dtypes=HALF),
    Case("nn.Mish", lambda M: M.nn.Mish(), [X((3, 7), -6, 6)], dtypes=HALF),
    Case("nn.PReLU", lambda M: M.nn.PReLU(), [X((2, 3, 4))]),
    Case("nn.PReLU", lambda M: M.nn.PReLU(3, init=0.1), [X((2, 3, 4))], id="nn.PReLU-channels"),
    Case("nn.RReLU", lambda M: M.nn.RReLU(0.1, 0.3), [X((3, 7))]),  # eval: the mean slope
    Case("nn.Softmin", lambda M: M.nn.Softmin(dim=1), [X((3, 7))]),
    Case("nn.Softsign", lambda M: M.nn.Softsign(), [X((3, 7), -4, 4)]),
    Case("nn.Softshrink", lambda M: M.nn.Softshrink(0.3), [X((3, 7))], dtypes=HALF),
    Case("nn.Hardshrink", lambda M: M.nn.Hardshrink(0.3), [X((3, 7))], dtypes=HALF),
    Case("nn.Tanhshrink", lambda M: M.nn.Tanhshrink(), [X((3, 7))]),
    Case("nn.Softmax2d", lambda M: M.nn.Softmax2d(), [X((2, 3, 4, 5))]),
    Case("nn.Softplus", lambda M: M.nn.Softplus(beta=2.0, threshold=5.0), [X((3, 7), -5, 5)]),
    Case("nn.Dropout1d", lambda M: M.nn.Dropout1d(0.3), [X((2, 3, 5))]),
    Case("nn.Dropout2d", lambda M: M.nn.Dropout2d(0.3), [X((2, 3, 4, 5))]),
    Case("nn.Dropout3d", lambda M: M.nn.Dropout3d(0.3), [X((2, 3, 2, 2, 2))]),
    Case("nn.AlphaDropout", lambda M: M.nn.AlphaDropout(0.2), [X((3, 7))]),
    Case("nn.FeatureAlphaDropout", lambda M: M.nn.FeatureAlphaDropout(0.2), [X((2, 3, 4))]),
    # ---------------------------------------------------------------- functional
    Case(F + "elu", _f("elu"), [X((3, 4), -3, 3)], kwargs=dict(alpha=0.5)),
    Case(F + "elu_", _f("elu_"), [Xc((3, 4), -3, 3)], grad=False),
    Case(F + "selu", _f("selu"), [X((3, 4), -3, 3)]),
    Case(F + "selu_", _f("selu_"), [Xc((3, 4), -3, 3)], grad=False),
    Case(F + "celu", _f("celu"), [X((3, 4), -3, 3)], kwargs=dict(alpha=0.5)),
    Case(F + "celu_", _f("celu_"), [Xc((3, 4), -3, 3)], grad=False),
    Case(F + "leaky_relu", _f("leaky_relu"), [X((3, 4))], kwargs=dict(negative_slope=0.1)),
    Case(F + "leaky_relu_", _f("leaky_relu_"), [Xc((3, 4))], grad=False),
    Case(F + "hardswish", _f("hardswish"), [X((3, 4), -5, 5)]),
    Case(F + "hardsigmoid", _f("hardsigmoid"), [X((3, 4), -5, 5)]),
    Case(F + "logsigmoid", _f("logsigmoid"), [X((3, 4), -5, 5)]),
    Case(F + "mish", _f("mish"), [X((3, 4), -5, 5)]),
    Case(F + "relu6", _f("relu6"), [X((3, 4), -8, 8)]),
    Case(F + "softshrink", _f("softshrink"), [X((3, 4))], kwargs=dict(lambd=0.2)),
    Case(F + "hardshrink", _f("hardshrink"), [X((3, 4))], kwargs=dict(lambd=0.2)),
    Case(F + "tanhshrink", _f("tanhshrink"), [X((3, 4))]),
    Case(F + "softsign", _f("softsign"), [X((3, 4), -3, 3)]),
    Case(F + "glu", _f("glu"), [X((4, 3))], kwargs=dict(dim=0)),
    Case(F + "prelu", _f("prelu"), [X((2, 3, 4)), X((3,))]),
    Case(F + "rrelu", _f("rrelu"), [X((3, 4))], kwargs=dict(lower=0.2, upper=0.4)),
    Case(F + "rrelu_", _f("rrelu_"), [Xc((3, 4))], grad=False),
    Case(F + "softmin", _f("softmin"), [X((3, 4))], kwargs=dict(dim=0)),
    Case(F + "threshold", _f("threshold"), [X((3, 4)), Const(0.3), Const(5.0)], id="act-threshold-positional"),
    Case(F + "softplus", _f("softplus"), [X((3, 4), -5, 5), Const(0.5), Const(1.0)], id="act-softplus-positional"),
    Case(F + "dropout1d", _f("dropout1d"), [X((2, 3, 4))], kwargs=dict(training=False)),
    Case(F + "dropout2d", _f("dropout2d"), [X((2, 3, 4, 4))], kwargs=dict(training=False)),
    Case(F + "dropout3d", _f("dropout3d"), [X((2, 3, 2, 2, 2))], kwargs=dict(training=False)),
    Case(F + "alpha_dropout", _f("alpha_dropout"), [X((3, 4))]),
    Case(F + "feature_alpha_dropout", _f("feature_alpha_dropout"), [X((2, 3, 4))]),
    Case(F + "dropout", _f("dropout"), [X((3, 4)), Const(0.0)], id="act-dropout-p0"),
    # ---------------------------------------------------------------- distances, lookups
    Case("nn.CosineSimilarity", lambda M: M.nn.CosineSimilarity(dim=1, eps=1e-6), [X((4, 5)), X((4, 5))]),
    Case("nn.PairwiseDistance", lambda M: M.nn.PairwiseDistance(p=1.5, keepdim=True), [X((4, 5)), X((4, 5))]),
    Case("nn.Bilinear", lambda M: M.nn.Bilinear(3, 4, 5), [X((2, 6, 3)), X((2, 6, 4))]),
    Case("nn.Bilinear", lambda M: M.nn.Bilinear(2, 3, 2, bias=False), [X((4, 2)), X((4, 3))], id="nn.Bilinear-nobias"),
    Case("nn.EmbeddingBag", lambda M: M.nn.EmbeddingBag(10, 3), [I((8,), 10), Sub(_offsets, I((1,), 2))]),
    Case("nn.EmbeddingBag", lambda M: M.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2),
         [I((3, 4), 10)], id="nn.EmbeddingBag-sum-2d-padding"),
    Case("nn.EmbeddingBag", lambda M: M.nn.EmbeddingBag(10, 3, mode="max", include_last_offset=True),
         [I((8,), 10), Sub(lambda M, t: M.tensor([0, 2, 2, 7]), I((1,), 2))], id="nn.EmbeddingBag-max-last"),
    Case("nn.Embedding", lambda M: M.nn.Embedding(10, 4, max_norm=1.0, norm_type=1.5), [I((3, 5), 10)],
         id="nn.Embedding-max-norm"),
    Case(F + "normalize", _f("normalize"), [X((3, 4))], kwargs=dict(p=3.0, dim=0)),
    Case(F + "one_hot", _f("one_hot"), [I((3, 4), 5)], kwargs=dict(num_classes=6), grad=False),
    Case(F + "cosine_similarity", _f("cosine_similarity"), [X((3, 1, 4)), X((2, 4))], kwargs=dict(dim=-1)),
    Case(F + "pairwise_distance", _f("pairwise_distance"), [X((3, 4)), X((4,))]),
    Case(F + "bilinear", _f("bilinear"), [X((5, 2)), X((5, 3)), X((4, 2, 3)), X((4,))]),
    Case(F + "embedding_bag", _f("embedding_bag"), [I((7,), 6), X((6, 3)), Sub(_offsets, I((1,), 2))],
         kwargs=dict(mode="sum")),
    Case(F + "embedding_bag", lambda M: lambda i, w, o, psw: M.nn.functional.embedding_bag(
        i, w, o, mode="sum", per_sample_weights=psw), [I((7,), 6), X((6, 3)), Sub(_offsets, I((1,), 2)), X((7,))],
         id=F + "embedding_bag-weights"),
]
