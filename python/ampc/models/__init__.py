"""ampc.models: ready-made networks for examples, tests and benchmarks.

MLP, SmallCNN (the demo's Fashion-MNIST network), ResNet-18/50 with torchvision's layout and
parameter names (so torchvision state_dicts map key for key), and a GPT-style decoder.
No weights ship with ampc: pretrained=True raises instead of downloading."""
from .cnn import SmallCNN  # noqa: F401
from .gpt import GPT, GPTConfig  # noqa: F401
from .mlp import MLP  # noqa: F401
from .resnet import BasicBlock, Bottleneck, ResNet, resnet18, resnet34, resnet50  # noqa: F401

__all__ = ["MLP", "SmallCNN", "ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50",
           "GPT", "GPTConfig"]
