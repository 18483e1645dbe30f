"""ampc.cuda streams and events: torch.cuda.Stream, Event, stream(), current_stream(),
default_stream() and set_stream().

Every op runs on the current stream of its GPU. It starts as the default (legacy) stream, whose
work is ordered with all other work on the device; `with ampc.cuda.stream(s):` makes `s` current
for the block. Streams from Stream() are non-blocking and come from a pool of 32 per device and
priority (as PyTorch's), so two Stream objects may share one CUDA stream. Memory allocated while
a stream is current belongs to it: free it only after the work that uses it on other streams is
done (synchronise, or make those streams wait).

The handles are plain integers (cudaStream_t, cudaEvent_t); the C side is
csrc/cuda/cuda_stream.c. Without a GPU, creating a Stream or an Event, current_stream() and
default_stream() raise a RuntimeError that says why.
"""
from .. import _C


def _index(device):
    from . import _index as index
    return index(device)


def _require(op):
    if not _C._cuda_is_available():
        raise RuntimeError(f"{op}: CUDA is not available: ampc was built without CUDA, or no NVIDIA driver/GPU "
                           "was found on this machine")


class Stream:
    """A CUDA stream: work submitted to it runs in order, independently of other streams.

    Args:
        device: the GPU (None: the current one).
        priority: lower numbers run first when both streams have work ready; clamped to the
            device's range (see priority_range()).
    """

    def __init__(self, device=None, priority=0):
        _require("Stream")
        self.device_index = _index(device)
        self.cuda_stream = _C._cuda_stream_create(self.device_index, int(priority))

    @classmethod
    def _wrap(cls, device_index, handle):
        s = cls.__new__(cls)
        s.device_index = device_index
        s.cuda_stream = handle
        return s

    @staticmethod
    def priority_range(device=None):
        """(least, greatest) priority of the device, e.g. (0, -5); lower is more urgent."""
        _require("Stream.priority_range")
        return _C._cuda_stream_priority_range(_index(device))

    @property
    def device(self):
        return _C.device(f"cuda:{self.device_index}")

    @property
    def priority(self):
        return _C._cuda_stream_priority(self.device_index, self.cuda_stream)

    def query(self):
        """True when all work submitted to the stream has completed."""
        return _C._cuda_stream_query(self.device_index, self.cuda_stream)

    def synchronize(self):
        """Waits until all work submitted to the stream has completed."""
        _C._cuda_stream_synchronize(self.device_index, self.cuda_stream)

    def wait_event(self, event):
        """Makes all future work on this stream wait for `event` (returns at once)."""
        event.wait(self)

    def wait_stream(self, stream):
        """Makes all future work on this stream wait for the work submitted to `stream` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Records `event` (a new one when None) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __enter__(self):
        ctx = StreamContext(self)
        self.__dict__.setdefault("_contexts", []).append(ctx)
        ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self.__dict__["_contexts"].pop().__exit__(*exc)

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.cuda_stream == other.cuda_stream
                and self.device_index == other.device_index)

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return f"<ampc.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"

    def __cuda_stream__(self):
        """The CUDA stream protocol: (version, handle)."""
        return (0, self.cuda_stream)


class Event:
    """A CUDA event: a marker in a stream, to wait for, synchronise on, or time between.

    Created on the device of the stream it is first recorded on. Args as torch's:
        enable_timing: needed for elapsed_time().
        blocking: synchronize() sleeps instead of spinning.
    """

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        _require("Event")
        if interprocess:
            raise RuntimeError("Event: interprocess events are not supported by ampc")
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self._handle = None  # capsule owning the cudaEvent_t, made at the first record()
        self._device_index = None

    @property
    def device(self):
        return None if self._device_index is None else _C.device(f"cuda:{self._device_index}")

    @property
    def cuda_event(self):
        return 0 if self._handle is None else _C._cuda_event_handle(self._handle)

    def record(self, stream=None):
        """Records the event on `stream` (the current stream when None)."""
        if stream is None:
            stream = current_stream()
        if self._handle is None:
            self._handle = _C._cuda_event_create(stream.device_index, self.enable_timing, self.blocking)
            self._device_index = stream.device_index
        _C._cuda_event_record(self._handle, stream.device_index, stream.cuda_stream)

    def wait(self, stream=None):
        """Makes all future work on `stream` (the current stream when None) wait for this event.
        An event never recorded is complete: nothing to wait for."""
        if stream is None:
            stream = current_stream()
        if self._handle is not None:
            _C._cuda_stream_wait_event(stream.device_index, stream.cuda_stream, self._handle)

    def query(self):
        """True when the work the event captured has completed (or it was never recorded)."""
        return True if self._handle is None else _C._cuda_event_query(self._handle)

    def synchronize(self):
        """Waits until the work the event captured has completed."""
        if self._handle is not None:
            _C._cuda_event_synchronize(self._handle)

    def elapsed_time(self, end_event):
        """Milliseconds from this event to `end_event` (both recorded, both with enable_timing).
        Waits for both events."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._handle is None or end_event._handle is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return _C._cuda_event_elapsed_time(self._handle, end_event._handle)

    def __repr__(self):
        if self._handle is None:
            return "<ampc.cuda.Event uninitialized>"
        return f"<ampc.cuda.Event {self.cuda_event:#x}>"


class StreamContext:
    """Makes `stream` current (and its device current) for a `with` block; None does nothing."""

    def __init__(self, stream):
        self.stream = stream
        self._saved = []

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        prev_device = _C._cuda_current_device()
        if s.device_index != prev_device:
            _C._cuda_set_device(s.device_index)
        prev_stream = _C._cuda_current_stream(s.device_index)
        _C._cuda_set_current_stream(s.device_index, s.cuda_stream)
        self._saved.append((prev_device, prev_stream))
        return s

    def __exit__(self, *exc):
        s = self.stream
        if s is None:
            return
        prev_device, prev_stream = self._saved.pop()
        _C._cuda_set_current_stream(s.device_index, prev_stream)
        if s.device_index != prev_device:
            _C._cuda_set_device(prev_device)


def stream(stream):
    """`with ampc.cuda.stream(s):` runs the block's ops on stream `s` (None: no change)."""
    return StreamContext(stream)


def set_stream(stream):
    """Makes `stream` the current stream of its device (prefer the `stream()` context)."""
    if stream is not None:
        _C._cuda_set_current_stream(stream.device_index, stream.cuda_stream)


def current_stream(device=None):
    """The stream ops on `device` (None: the current GPU) run on now."""
    _require("current_stream")
    index = _index(device)
    return Stream._wrap(index, _C._cuda_current_stream(index))


def default_stream(device=None):
    """The default (legacy) stream of a GPU: handle 0, ordered with all work on the device."""
    _require("default_stream")
    index = _index(device)
    _C._cuda_current_stream(index)  # validates the index
    return Stream._wrap(index, 0)
