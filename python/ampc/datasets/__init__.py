"""ampc.datasets: data sets that ship with the machine (no downloads)."""
from .fashion_mnist import FashionMNIST  # noqa: F401
