"""The vocabulary of the nn parity harness: one `Case` per module or function, and the input specs.

A case says how to build the thing under test from a library namespace `M` (ampc or torch, so
the same lambda builds both: `lambda M: M.nn.LSTM(4, 6, num_layers=2)`), which inputs to call it
with, and what to check. The runner (runner.py) does the rest: same seed for both libraries,
torch's state_dict loaded into ampc (strict), forward values and dtypes, gradients of the inputs
and parameters, the state_dict round trip back into torch, repr, and initialisation bit-exact with
torch's under the same seed.

Input specs are drawn with a NumPy generator seeded from the case id, so both libraries get the
same values:
  X(shape, low=-1, high=1)       floating, in the dtype under test, requires grad
  Xc(shape, low=-1, high=1)      floating, in the dtype under test, no grad (masks, targets)
  I(shape, high, low=0)          int64 in [low, high)
  Bool(shape, p=0.5)             bool, True with probability p
  Const(value)                   a Python value passed as is (ints, tuples, strings, None)
  Sub(name, spec)                an input built from the library: `lambda M, t: ...` over the drawn
                                 tensor (e.g. a PackedSequence); `spec` is drawn first
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class X:
    shape: tuple
    low: float = -1.0
    high: float = 1.0
    grad: bool = True


def Xc(shape, low=-1.0, high=1.0):
    return X(tuple(shape), low, high, grad=False)


@dataclass(frozen=True)
class I:
    shape: tuple
    high: int
    low: int = 0


@dataclass(frozen=True)
class Bool:
    shape: tuple
    p: float = 0.5


@dataclass(frozen=True)
class Const:
    value: Any


@dataclass(frozen=True)
class Sub:
    """make(M, drawn) -> the input; drawn is the library tensor of `spec`."""
    make: Callable
    spec: Any


@dataclass
class Case:
    """One parity check. Fields:
      id        unique name of the case (test id); defaults to `name`
      name      the torch name it covers, e.g. "nn.LSTM" or "nn.functional.elu" (the coverage test
                reads these)
      build     M -> module or function
      inputs    list of specs (above); kwargs: keyword arguments of the call
      call      (obj, *inputs, **kwargs) -> output; default obj(*inputs, **kwargs)
      dtypes    the floating dtypes to run ("float32", "float64", "float16", "bfloat16")
      grad      compare gradients (inputs with grad=True and every parameter)
      train     module mode (eval when False); random modules are checked in eval mode or by their own tests
      init      compare the freshly built parameters and buffers with torch's bit for bit (same seed)
      repr      compare repr(module) with torch's
      rtol/atol tolerance overrides (None: by dtype)
      cuda      also run on the CUDA device (emulator or GPU)
    """
    name: str
    build: Callable
    inputs: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    id: Optional[str] = None
    call: Optional[Callable] = None
    dtypes: tuple = ("float32", "float64")
    grad: bool = True
    train: bool = False
    init: bool = True
    repr: bool = True
    rtol: Optional[float] = None
    atol: Optional[float] = None
    cuda: bool = True

    def __post_init__(self):
        if self.id is None:
            self.id = self.name
