"""The layers of ampc.nn, one file per family as in torch.nn.modules."""
from .activation import GELU, LogSoftmax, MultiheadAttention, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import Dropout
from .linear import Flatten, Identity, Linear, Unflatten
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss
from .module import Module
from .normalization import GroupNorm, LayerNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .sparse import Embedding
from .transformer import TransformerEncoder, TransformerEncoderLayer

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "Identity", "Linear", "Flatten", "Unflatten", "Conv1d",
    "Conv2d", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "MultiheadAttention",
    "BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "Embedding", "Dropout", "MaxPool2d", "AvgPool2d",
    "AdaptiveAvgPool2d", "TransformerEncoderLayer", "TransformerEncoder", "L1Loss", "MSELoss", "SmoothL1Loss",
    "NLLLoss", "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss",
]
