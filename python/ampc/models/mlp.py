"""MLP: Linear layers with an activation (and optional dropout) between them."""
from .. import nn

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


class MLP(nn.Module):
    """in_features -> hidden[0] -> ... -> hidden[-1] -> out_features. Inputs with more than two
    dimensions are flattened after the batch dimension, so images go in as they are."""

    def __init__(self, in_features, hidden, out_features, activation="relu", dropout=0.0):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"MLP: unknown activation {activation!r}; expected one of {sorted(_ACTIVATIONS)}")
        layers = []
        width = in_features
        for h in hidden:
            layers += [nn.Linear(width, h), _ACTIVATIONS[activation]()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = h
        layers.append(nn.Linear(width, out_features))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        if x.dim() > 2:
            x = x.flatten(1)
        return self.net(x)
