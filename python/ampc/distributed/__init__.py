"""ampc.distributed: torch.distributed's process-group API on an existing collective engine.

Backends:
- "mpi": Open MPI (Debian's libopenmpi-dev / openmpi-bin) through mpi4py, for CPU tensors. The
  processes are started by `python -m ampc.distributed.run` (torchrun's flags; it runs them under
  mpirun) or by mpirun itself.
- "gloo": mapped to "mpi" (ampc has no Gloo): said once, with a warning.
- "nccl": CUDA tensors; needs a CUDA build of ampc with NCCL loaded, which this build does not
  provide yet, so init_process_group(backend="nccl") raises a RuntimeError that says so.

Collectives take CPU tensors, contiguous; float16/bfloat16 are reduced in float32 and rounded once
(MPI has no 16-bit float arithmetic). `async_op=True` returns a Work whose wait() completes it;
collectives on the MPI backend complete before they return (MPI's blocking calls), so wait() is
immediate and is_completed() True: the overlap of communication with backward that torch's
reducer gets is not there yet.
"""
import os
import warnings
from datetime import timedelta
from enum import Enum

__all__ = [
    "is_available", "is_initialized", "is_mpi_available", "is_nccl_available", "is_gloo_available",
    "is_torchelastic_launched", "init_process_group", "destroy_process_group", "get_rank", "get_world_size",
    "get_backend", "new_group", "barrier", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "reduce_scatter", "reduce_scatter_tensor", "reduce", "gather", "scatter", "all_gather_object",
    "broadcast_object_list", "ReduceOp", "Backend", "Work", "GroupMember", "group", "get_process_group_ranks",
]


class ReduceOp(Enum):
    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"
    AVG = "avg"

    def __repr__(self):
        return f"<RedOpType.{self.name}: {list(ReduceOp).index(self)}>"


class Backend(str):
    """Backend names as torch spells them (Backend.GLOO == "gloo")."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got {type(name)}")
        return str.__new__(cls, name.lower())


class Work:
    """The handle of an async collective (torch.distributed.Work)."""

    def __init__(self, result=None):
        self._result = result

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def result(self):
        return self._result if self._result is not None else []

    def get_future(self):
        raise RuntimeError("ampc.distributed: Work.get_future is not supported (collectives complete synchronously)")


class _WorldGroup:
    """The default process group (torch's GroupMember.WORLD)."""

    def __repr__(self):
        return "<ampc.distributed.ProcessGroup WORLD>"


class GroupMember:
    WORLD = _WorldGroup()
    NON_GROUP_MEMBER = object()


group = GroupMember

_state = {"pg": None, "backend": None, "warned_gloo": False}


def is_available():
    return True


def is_mpi_available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_gloo_available():
    """False: ampc has no Gloo; init_process_group(backend="gloo") runs on MPI instead."""
    return False


def is_nccl_available():
    return False


def is_torchelastic_launched():
    return "TORCHELASTIC_RUN_ID" in os.environ


def is_initialized():
    return _state["pg"] is not None


def _pg():
    if _state["pg"] is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _state["pg"]


def _check_group(group, fname):
    if group is not None and group is not GroupMember.WORLD:
        raise ValueError(f"ampc.distributed.{fname}: only the default group (WORLD) is supported")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """torch.distributed.init_process_group. init_method "env://" (default) reads RANK and
    WORLD_SIZE (MASTER_ADDR/PORT are accepted; MPI forms the world itself), which must agree with
    the MPI world this process belongs to."""
    if _state["pg"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend or ("mpi"))
    if ":" in name:  # "cpu:gloo,cuda:nccl"
        parts = dict(p.split(":", 1) for p in name.split(","))
        name = Backend(parts.get("cpu", next(iter(parts.values()))))
    if name == Backend.NCCL:
        raise RuntimeError("ampc.distributed: the 'nccl' backend needs ampc's CUDA build with NCCL, which this build "
                           "does not have; use backend='mpi' (or 'gloo') for CPU tensors")
    if name == Backend.GLOO:
        if not _state["warned_gloo"]:
            warnings.warn("ampc.distributed: backend 'gloo' runs on MPI (ampc has no Gloo); results are the same",
                          UserWarning, stacklevel=2)
            _state["warned_gloo"] = True
    elif name != Backend.MPI:
        raise ValueError(f"Invalid backend: '{name}'")
    if init_method not in (None, "env://") and not str(init_method).startswith(("tcp://", "file://")):
        raise ValueError(f"ampc.distributed: unsupported init_method {init_method!r}")
    from ._mpi import MPIProcessGroup
    pg = MPIProcessGroup()
    want_size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", pg.size))
    want_rank = rank if rank != -1 else int(os.environ.get("RANK", pg.rank))
    if (want_size, want_rank) != (pg.size, pg.rank):
        raise RuntimeError(f"ampc.distributed: rank {want_rank} of world size {want_size} was asked for, but this "
                           f"process is rank {pg.rank} of an MPI world of {pg.size}: start the processes with "
                           f"`python -m ampc.distributed.run --nproc-per-node N` (or mpirun -np N)")
    _state["pg"], _state["backend"] = pg, name


def destroy_process_group(group=None):
    _check_group(group, "destroy_process_group")
    _state["pg"], _state["backend"] = None, None


def get_rank(group=None):
    _check_group(group, "get_rank")
    return _pg().rank


def get_world_size(group=None):
    _check_group(group, "get_world_size")
    return _pg().size


def get_backend(group=None):
    _check_group(group, "get_backend")
    _pg()
    return _state["backend"]


def get_process_group_ranks(group):
    return list(range(get_world_size()))


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False):
    if ranks is not None and sorted(ranks) != list(range(get_world_size())):
        raise ValueError("ampc.distributed.new_group: only a group of all ranks is supported")
    return GroupMember.WORLD


def _done(async_op, result=None):
    return Work(result) if async_op else None


def barrier(group=None, async_op=False, device_ids=None):
    _check_group(group, "barrier")
    _pg().barrier()
    return _done(async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _check_group(group, "all_reduce")
    _pg().all_reduce(tensor, op)
    return _done(async_op, [tensor])


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    _check_group(group, "reduce")
    _pg().reduce(tensor, dst, op)
    return _done(async_op, [tensor])


def broadcast(tensor, src, group=None, async_op=False):
    _check_group(group, "broadcast")
    _pg().broadcast(tensor, src)
    return _done(async_op, [tensor])


def all_gather(tensor_list, tensor, group=None, async_op=False):
    _check_group(group, "all_gather")
    _pg().all_gather(tensor_list, tensor)
    return _done(async_op, tensor_list)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    _check_group(group, "all_gather_into_tensor")
    _pg().all_gather_into_tensor(output_tensor, input_tensor)
    return _done(async_op, [output_tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    _check_group(group, "reduce_scatter")
    _pg().reduce_scatter(output, input_list, op)
    return _done(async_op, [output])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    _check_group(group, "reduce_scatter_tensor")
    _pg().reduce_scatter_tensor(output, input, op)
    return _done(async_op, [output])


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    _check_group(group, "gather")
    _pg().gather(tensor, gather_list, dst)
    return _done(async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    _check_group(group, "scatter")
    _pg().scatter(tensor, scatter_list, src)
    return _done(async_op, [tensor])


def all_gather_object(object_list, obj, group=None):
    _check_group(group, "all_gather_object")
    object_list[:] = _pg().comm.allgather(obj)


def broadcast_object_list(object_list, src=0, group=None, device=None):
    _check_group(group, "broadcast_object_list")
    object_list[:] = _pg().comm.bcast(list(object_list) if _pg().rank == src else None, root=src)


def _default_timeout():
    return timedelta(minutes=30)
