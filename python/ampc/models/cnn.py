"""SmallCNN: the demo's Fashion-MNIST network, two conv blocks and a linear classifier.

(N, C, 28, 28) -> conv3x3(C->32)+BN+ReLU+maxpool -> (N, 32, 14, 14)
              -> conv3x3(32->64)+BN+ReLU+maxpool -> (N, 64, 7, 7) -> Linear(64*7*7 -> classes).
`channels` sets the two blocks' widths: (32, 64) by default; (16, 32) costs about half.
The second conv dominates: 128 x 64 x 14 x 14 x 32 x 9 x 2 = 0.9 GFLOP forward per batch of 128,
so an epoch (469 batches, forward + backward) is about 1.3 TFLOP whatever runs it.
Measured on this project's 2-core Xeon VM while shared with builds (load ~8), one Adam step on a
batch of 128: (32, 64) 1.08 s FP32 / 0.89 s bf16 AMP (torch 2.13 on the same machine: 0.61 s
FP32), (16, 32) 0.67 s / 0.46 s; an epoch of Fashion-MNIST is minutes there, not under one."""
from .. import nn


class SmallCNN(nn.Module):
    def __init__(self, in_channels=1, num_classes=10, image_size=28, channels=(32, 64)):
        super().__init__()
        c1, c2 = channels
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, c1, 3, padding=1, bias=False),  # bias=False: BN adds its own
            nn.BatchNorm2d(c1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1, bias=False),
            nn.BatchNorm2d(c2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        side = image_size // 4
        self.classifier = nn.Linear(c2 * side * side, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))
