"""Parity cases of nn's remaining small names: F.relu_, F.conv_tbc, F.gumbel_softmax (same seed, same
sample), and the deprecated nn.Container and nn.NLLLoss2d."""
import warnings

from nn_parity.spec import Case, I, X, Xc

F = "nn.functional."


def _f(name):
    return lambda M: getattr(M.nn.functional, name)


def _quiet(build):
    def b(M):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return build(M)
    return b


CASES = [
    Case(F + "relu_", _f("relu_"), [Xc((3, 5))], grad=False),
    Case(F + "conv_tbc", _f("conv_tbc"), [X((7, 2, 3)), X((3, 3, 4)), X((4,))], kwargs=dict(pad=1)),
    Case(F + "gumbel_softmax", _f("gumbel_softmax"), [X((4, 6))], kwargs=dict(tau=0.5), grad=False),
    Case(F + "gumbel_softmax", _f("gumbel_softmax"), [X((4, 6))], kwargs=dict(hard=True, dim=0),
         id="nn.functional.gumbel_softmax-hard", grad=False),
    Case("nn.Container", _quiet(lambda M: M.nn.Container(lin=M.nn.Linear(3, 2))),
         [X((4, 3))], call=lambda m, x: m.lin(x)),
    Case("nn.NLLLoss2d", _quiet(lambda M: M.nn.NLLLoss2d()), [X((2, 3, 4, 4)), I((2, 4, 4), 3)]),
]
