"""SmallCNN: the demo's Fashion-MNIST network, two conv blocks and a linear classifier.

(N, C, 28, 28) -> conv3x3(C->32)+BN+ReLU+maxpool -> (N, 32, 14, 14)
              -> conv3x3(32->64)+BN+ReLU+maxpool -> (N, 64, 7, 7) -> Linear(64*7*7 -> classes).
Small on purpose: one epoch of Fashion-MNIST fits in well under a minute on two CPU cores."""
from .. import nn


class SmallCNN(nn.Module):
    def __init__(self, in_channels=1, num_classes=10, image_size=28):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, 3, padding=1, bias=False),  # bias=False: BN adds its own
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        side = image_size // 4
        self.classifier = nn.Linear(64 * side * side, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))
