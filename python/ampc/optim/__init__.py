"""ampc.optim: PyTorch's optimizers (torch.optim) over ampc tensors.

SGD, Adam, AdamW, Adadelta, RMSprop, Adagrad, NAdam, RAdam, Adamax, ASGD and Rprop keep PyTorch's
constructor arguments, param groups, state layout and state_dict format; their math is one fused C
call per (device, dtype) group per step (csrc/core/optim.h), which skips on the device when the
GradScaler found inf/NaN grads, so `scaler.step(opt)` + `scaler.update()` read nothing back from the
device. LBFGS, Adafactor and Muon compose tensor ops per parameter as PyTorch's do. lr_scheduler
holds the learning-rate schedules, swa_utils the weight averaging.
"""
from . import lr_scheduler
from ._adafactor import Adafactor
from ._muon import Muon
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from . import swa_utils

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adadelta", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax", "ASGD",
           "Rprop", "LBFGS", "Adafactor", "Muon", "swap_in_optimizer_params_and_state", "lr_scheduler", "swa_utils"]
