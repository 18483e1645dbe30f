"""The MPI process group of ampc.distributed: collectives of CPU tensors through mpi4py (Open MPI).

Tensors are handed to MPI as NumPy views of their storage (no copy) when they are contiguous
float32/float64/int32/int64/uint8/bool; float16 and bfloat16 go through a float32 buffer (MPI has
no 16-bit float arithmetic), reduced there and rounded once on the way back. Torch's errors for
non-contiguous tensors and mismatched sizes are kept."""
import numpy as np

from . import ReduceOp


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - the tests install it
        raise RuntimeError("ampc.distributed: the MPI backend needs mpi4py and Open MPI "
                           "(pip install mpi4py; apt-get install libopenmpi-dev openmpi-bin)") from e
    return MPI


def _ampc():
    import ampc
    return ampc


_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
        ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}


class _Buffer:
    """A NumPy view of tensor t for MPI, and how to write the result back."""

    def __init__(self, t, fname):
        a = _ampc()
        if not isinstance(t, a.Tensor):
            raise TypeError(f"ampc.distributed.{fname}: expected a Tensor, got {type(t).__name__}")
        if t.device.type != "cpu":
            raise RuntimeError(f"ampc.distributed.{fname}: the MPI backend takes CPU tensors, got one on {t.device}")
        if not t.is_contiguous():
            raise ValueError("Tensors must be contiguous")
        self.t = t
        self.widened = t.dtype in (a.float16, a.bfloat16)
        self.arr = t.detach().float().numpy() if self.widened else t.detach().numpy()

    def write_back(self):
        if self.widened:
            a = _ampc()
            self.t.detach().copy_(a.from_numpy(self.arr))


class MPIProcessGroup:
    def __init__(self):
        MPI = _mpi()
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()

    def _op(self, op):
        if isinstance(op, str):
            op = ReduceOp[op.upper()]
        if op not in _OPS:
            raise ValueError(f"ampc.distributed: unsupported reduce op {op!r}")
        return getattr(self.MPI, _OPS[op])

    def _check_rank(self, r, what):
        if not 0 <= r < self.size:
            raise ValueError(f"Invalid {what} rank {r}: the world has {self.size} ranks")

    def _finish(self, buf, op):
        if op == ReduceOp.AVG:
            if not np.issubdtype(buf.arr.dtype, np.floating):
                raise ValueError("ampc.distributed: ReduceOp.AVG needs a floating tensor")
            buf.arr /= self.size
        buf.write_back()

    def barrier(self):
        self.comm.Barrier()

    def all_reduce(self, t, op):
        b = _Buffer(t, "all_reduce")
        self.comm.Allreduce(self.MPI.IN_PLACE, b.arr, op=self._op(op))
        self._finish(b, op)

    def reduce(self, t, dst, op):
        self._check_rank(dst, "destination")
        b = _Buffer(t, "reduce")
        if self.rank == dst:
            self.comm.Reduce(self.MPI.IN_PLACE, b.arr, op=self._op(op), root=dst)
            self._finish(b, op)
        else:
            self.comm.Reduce(b.arr, None, op=self._op(op), root=dst)

    def broadcast(self, t, src):
        self._check_rank(src, "source")
        b = _Buffer(t, "broadcast")
        self.comm.Bcast(b.arr, root=src)
        b.write_back()

    def _same_shape(self, fname, out, inp):
        if tuple(out.shape) != tuple(inp.shape) or out.dtype != inp.dtype:
            raise ValueError(f"ampc.distributed.{fname}: tensors of shape {tuple(out.shape)} ({out.dtype}) and "
                             f"{tuple(inp.shape)} ({inp.dtype}) must match")

    def all_gather(self, tensor_list, t):
        if len(tensor_list) != self.size:
            raise ValueError(f"ampc.distributed.all_gather: tensor_list has {len(tensor_list)} tensors for a world "
                             f"of {self.size}")
        for out in tensor_list:
            self._same_shape("all_gather", out, t)
        a = _ampc()
        b = _Buffer(t, "all_gather")
        recv = np.empty((self.size,) + b.arr.shape, dtype=b.arr.dtype)
        self.comm.Allgather(b.arr, recv)
        for i, out in enumerate(tensor_list):
            out.detach().copy_(a.from_numpy(recv[i].copy()))

    def all_gather_into_tensor(self, out, t):
        if out.numel() != t.numel() * self.size or out.dtype != t.dtype:
            raise ValueError(f"ampc.distributed.all_gather_into_tensor: output of {out.numel()} elements "
                             f"({out.dtype}) for {self.size} x {t.numel()} ({t.dtype})")
        b_in, b_out = _Buffer(t, "all_gather_into_tensor"), _Buffer(out, "all_gather_into_tensor")
        self.comm.Allgather(b_in.arr, b_out.arr)
        b_out.write_back()

    def reduce_scatter_tensor(self, out, t, op):
        if t.numel() != out.numel() * self.size or out.dtype != t.dtype:
            raise ValueError(f"ampc.distributed.reduce_scatter_tensor: input of {t.numel()} elements "
                             f"({t.dtype}) for {self.size} x {out.numel()} ({out.dtype})")
        b_in, b_out = _Buffer(t, "reduce_scatter_tensor"), _Buffer(out, "reduce_scatter_tensor")
        self.comm.Reduce_scatter_block(b_in.arr, b_out.arr, op=self._op(op))
        self._finish(b_out, op)

    def reduce_scatter(self, out, input_list, op):
        if len(input_list) != self.size:
            raise ValueError(f"ampc.distributed.reduce_scatter: input_list has {len(input_list)} tensors for a world "
                             f"of {self.size}")
        for x in input_list:
            self._same_shape("reduce_scatter", out, x)
        a = _ampc()
        self.reduce_scatter_tensor(out, a.stack([x.detach() for x in input_list]).contiguous(), op)

    def gather(self, t, gather_list, dst):
        self._check_rank(dst, "destination")
        a = _ampc()
        b = _Buffer(t, "gather")
        if self.rank == dst:
            if gather_list is None or len(gather_list) != self.size:
                raise ValueError("ampc.distributed.gather: the destination needs a gather_list of world-size tensors")
            recv = np.empty((self.size,) + b.arr.shape, dtype=b.arr.dtype)
            self.comm.Gather(b.arr, recv, root=dst)
            for i, out in enumerate(gather_list):
                out.detach().copy_(a.from_numpy(recv[i].copy()))
        else:
            self.comm.Gather(b.arr, None, root=dst)

    def scatter(self, t, scatter_list, src):
        self._check_rank(src, "source")
        b = _Buffer(t, "scatter")
        send = None
        if self.rank == src:
            if scatter_list is None or len(scatter_list) != self.size:
                raise ValueError("ampc.distributed.scatter: the source needs a scatter_list of world-size tensors")
            a = _ampc()
            send = _Buffer(a.stack([x.detach() for x in scatter_list]).contiguous(), "scatter").arr
        self.comm.Scatter(send, b.arr, root=src)
        b.write_back()
