"""ampc.cpu: CPU namespace (ampc.cpu.amp)."""
from . import amp  # noqa: F401
