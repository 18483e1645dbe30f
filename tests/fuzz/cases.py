"""One fuzz case from (seed, index) alone: which op, its inputs and its call, as Python source.

`make_case(seed, index)` seeds NumPy's generator with (seed, index), so any case can be rebuilt
without the ones before it; `reproducer(case)` is the short program printed for a failure.
"""
from dataclasses import dataclass, field

import numpy as np

from ops import OPS
from tensors import Draw

OP_NAMES = sorted(OPS)


@dataclass
class Case:
    seed: int
    index: int
    op: str
    lines: list          # setup statements (inputs), then the call's statements
    expr: str            # the call: its value is the result compared
    grads: list          # leaves whose .grad is compared after backward
    differentiable: bool
    flags: set = field(default_factory=set)


def make_case(seed, index, ops=None):
    rng = np.random.default_rng([seed, index])
    names = ops or OP_NAMES
    name = names[int(rng.integers(0, len(names)))]
    gen, differentiable = OPS[name]
    d = Draw(rng)
    call = gen(d)
    statements = call if isinstance(call, list) else [call]
    return Case(seed, index, name, d.lines + statements[:-1], statements[-1], d.grads if differentiable else [],
                differentiable, d.flags)


def source(case):
    """The case as one program: `out` holds the result; backward runs when grads are compared."""
    body = list(case.lines) + ["out = %s" % case.expr]
    if case.grads:
        body.append("backward(out)")
    return "\n".join(body)


# the loss whose gradients are compared: weights that vary, so rows that a plain sum() would make
# cancel exactly (softmax, the norms) still get a gradient that is not rounding noise
BACKWARD = "(out.double() * M.arange(out.numel(), dtype=M.float64).reshape(out.shape).cos()).sum().backward()"


def reproducer(case):
    return "\n".join([
        "# fuzz case seed=%d index=%d op=%s; run with each of:" % (case.seed, case.index, case.op),
        "import ampc as M  # import torch as M",
        "F = M.nn.functional",
        "from math import inf, nan",
        source(case).replace("backward(out)", "%s  # compare %s" % (BACKWARD, ", ".join(g + ".grad" for g in case.grads))),
        "print(out)",
    ])
