"""How tensors cross process boundaries (torch.multiprocessing.reductions).

multiprocessing pickles what it sends (Process args under spawn/forkserver, Queue and Pipe
items, Pool tasks) with ForkingPickler; registered here, a CPU tensor is not copied: its storage
moves to shared memory (Tensor.share_memory_(), a memfd region) and the pickle carries the
region's fd, so the receiver maps the same pages and an in-place update on either side is seen
by the other (Hogwild training). Strategies, as torch's:
- "file_descriptor" (default): the fd travels through multiprocessing.reduction.DupFd (passed to
  a spawned child at start, or sent over a Unix socket by the sender's resource sharer).
- "file_system": the receiver opens the region by name, /proc/<sender pid>/fd/<fd> (no fd
  passing; the sender must still hold the tensor when the receiver unpickles, as with torch).
The region is anonymous: the kernel frees it with its last mapping and fd, so nothing is left in
/dev/shm when processes exit. CUDA tensors are not shared (torch uses CUDA IPC): sending one
raises a RuntimeError saying so.
"""
import multiprocessing
import os
from multiprocessing.reduction import ForkingPickler

from .. import _C

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy):
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"set_sharing_strategy: unknown strategy {new_strategy!r}; one of {list(_STRATEGIES)}")
    _strategy = new_strategy


def get_sharing_strategy():
    return _strategy


def get_all_sharing_strategies():
    return set(_STRATEGIES)


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _open_handle(handle):
    kind, value = handle
    if kind == "fd":
        return value.detach()  # an fd this process owns
    return os.open(value, os.O_RDWR | os.O_CLOEXEC)


def rebuild_tensor(handle, nbytes, dtype_name, offset, size, stride, requires_grad, is_parameter):
    fd = _open_handle(handle)
    t = _C._tensor_from_shared_fd(fd, nbytes, getattr(_C, dtype_name), offset, size, stride)
    if is_parameter:
        from ..nn.parameter import Parameter

        return Parameter(t, requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(t):
    from ..nn.parameter import Parameter

    if t.device.type != "cpu":
        raise RuntimeError(f"ampc.multiprocessing: sending a {t.device.type} tensor to another process is not "
                           "supported (torch shares CUDA memory through CUDA IPC, which ampc does not implement); "
                           "send t.cpu() instead")
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries.  If you just want to transfer the data, "
                           "call detach() on the tensor before serializing (e.g., putting it on the queue).")
    t.share_memory_()  # in place: the sender's tensor now lives in the region it sends
    fd = _C._shared_fd(t)
    if _strategy == "file_descriptor":
        handle = ("fd", multiprocessing.reduction.DupFd(fd))
    else:
        handle = ("path", f"/proc/{os.getpid()}/fd/{fd}")
    return (rebuild_tensor, (handle, _C._storage_nbytes(t), _dtype_name(t.dtype), t.storage_offset(),
                             tuple(t.shape), tuple(t.stride()), t.requires_grad, isinstance(t, Parameter)))


def init_reductions():
    from ..nn.parameter import Parameter

    for cls in (_C.Tensor, Parameter):
        ForkingPickler.register(cls, reduce_tensor)
