"""ampc.monitor: AMPMonitor, the user article's monitor as a real feature.

It reads the scaler's device-side telemetry (scaler.stats(): scale, skipped steps, overflow
streak) and ampc's own allocator statistics (device memory on CUDA, tensor memory on CPU) instead
of guessing, and times steps. Use it in any loop:

    monitor = AMPMonitor(scaler, every=50)
    for epoch in ...:
        for batch_idx, (x, y) in enumerate(loader):
            ...train step...
            monitor.step(epoch, batch_idx)          # prints every 50 steps
    print(monitor.summary())                         # a dict

Reading the stats is the only host synchronisation it adds, and only on the steps it prints."""
import time

from .. import _C


def memory_stats(device="cpu"):
    """(allocated, peak) bytes of ampc's allocator for a device ("cpu", "cuda", "cuda:0")."""
    device = str(device)
    if device.startswith("cuda"):
        from .. import cuda

        index = int(device.split(":")[1]) if ":" in device else cuda.current_device()
        return cuda.memory_allocated(index), cuda.max_memory_allocated(index)
    st = _C._cpu_memory_stats()
    return st["allocated"], st["peak_allocated"]


def _scaler_device(scaler):
    """The device a GradScaler works on: its scale tensor's once scale() has run, else the device
    it was made for (None for a disabled or absent scaler)."""
    if scaler is None or not scaler.is_enabled():
        return None
    scale = scaler._get_scale_async()
    return str(scale.device) if scale is not None else str(scaler._device)


class AMPMonitor:
    """device: whose memory statistics are reported; None (the default) follows the scaler (its
    scale's device, so a CUDA run reports CUDA memory), else "cpu"."""

    def __init__(self, scaler=None, every=50, device=None, printer=print):
        self.scaler = scaler
        self.every = every
        self.device = device
        self.printer = printer
        self.overflow_count = 0
        self._last_skipped = 0
        self._last_time = None
        self.step_times = []

    def log_stats(self, epoch, batch_idx):
        """Returns (and prints, with a printer) the current statistics as a dict."""
        info = self.snapshot()
        info.update(epoch=epoch, batch=batch_idx)
        if self.printer:
            mib = 1024 * 1024
            self.printer(f"Epoch {epoch}, Batch {batch_idx}: memory {info['memory_allocated'] / mib:.1f} MiB "
                         f"(peak {info['memory_peak'] / mib:.1f} MiB), scale {info['scale']:.0f}, "
                         f"skipped {info['skipped_steps']}, step {info['step_time_ms']:.1f} ms")
        return info

    def check_overflow(self):
        """Counts the steps skipped since the last check (from the scaler's telemetry)."""
        if self.scaler is None or not self.scaler.is_enabled():
            return 0
        skipped = self.scaler.stats()["skipped_steps"]
        new = skipped - self._last_skipped
        self._last_skipped = skipped
        self.overflow_count += new
        if new and self.printer:
            self.printer(f"Overflow detected! Count: {self.overflow_count}")
        return new

    def step(self, epoch=0, batch_idx=0):
        """Call once per training step: records its time; logs every `every` steps."""
        now = time.perf_counter()
        if self._last_time is not None:
            self.step_times.append(now - self._last_time)
        self._last_time = now
        if self.every and batch_idx % self.every == 0:
            self.check_overflow()
            return self.log_stats(epoch, batch_idx)
        return None

    def snapshot(self):
        allocated, peak = memory_stats(self.device or _scaler_device(self.scaler) or "cpu")
        stats = self.scaler.stats() if self.scaler is not None else None
        recent = self.step_times[-self.every:] if self.step_times else []
        return {
            "scale": stats["scale"] if stats else 1.0,
            "skipped_steps": stats["skipped_steps"] if stats else 0,
            "overflow_streak": stats["overflow_streak"] if stats else 0,
            "memory_allocated": allocated,
            "memory_peak": peak,
            "step_time_ms": 1000 * sum(recent) / len(recent) if recent else 0.0,
        }

    def summary(self):
        info = self.snapshot()
        info["overflow_count"] = self.overflow_count
        info["steps_timed"] = len(self.step_times)
        return info
