"""ampc.optim: PyTorch's optimizers (torch.optim) over ampc tensors.

SGD, Adam, AdamW, Adadelta, RMSprop and Adagrad keep PyTorch's constructor arguments, param groups,
state layout and state_dict format; their math is one fused C call per (device, dtype) group per
step (csrc/core/optim.h), which skips on the device when the GradScaler found inf/NaN grads, so
`scaler.step(opt)` + `scaler.update()` read nothing back from the device. lr_scheduler holds the
learning-rate schedules.
"""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adadelta", "RMSprop", "Adagrad", "lr_scheduler"]
