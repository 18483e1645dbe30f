"""ampc._nn_toplevel_act: issue 13 act's nn ops that torch also has at its top level, with ATen's
argument orders (torch.alpha_dropout(input, p, train), ...), each mapped onto nn.functional's one
implementation."""
from .nn import _functional_act as _act
from .nn import functional as F


def selu(input):
    return F.selu(input)


def selu_(input):
    return F.selu_(input)


def celu(input, alpha=1.0):
    return F.celu(input, alpha)


def celu_(input, alpha=1.0):
    return F.celu_(input, alpha)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if generator is not None:
        raise NotImplementedError("ampc: rrelu(generator=...): the slopes come from the default generator")
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if generator is not None:
        raise NotImplementedError("ampc: rrelu_(generator=...): the slopes come from the default generator")
    return F.rrelu_(input, lower, upper, training)


def prelu(input, weight):
    return F.prelu(input, weight)


def hardshrink(input, lambd=0.5):
    return F.hardshrink(input, lambd)


def dropout_(input, p, train):
    return F.dropout(input, p, train, True)


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, train, True)


def feature_dropout(input, p, train):
    return _act._feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    return _act._feature_dropout(input, p, train, True)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, train, True)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def bilinear(input1, input2, weight, bias=None):
    return F.bilinear(input1, input2, weight, bias)


def embedding_renorm_(input, indices, max_norm, norm_type):
    _act._embedding_renorm_(input, indices, max_norm, norm_type)
    return input


FUNCTIONS = {name: fn for name, fn in globals().items() if callable(fn) and not name.startswith("_")
             and getattr(fn, "__module__", None) == __name__}
