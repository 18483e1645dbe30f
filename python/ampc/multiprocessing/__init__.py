"""ampc.multiprocessing: torch.multiprocessing, Python's multiprocessing with tensors shared.

Everything of the standard module is re-exported (Process, Queue, Pool, Pipe, set_start_method,
get_context, cpu_count, ...); importing this registers the tensor reductions (reductions.py),
so tensors sent to other processes share memory instead of being copied, whichever start
method (fork, spawn, forkserver). Plus torch's sharing-strategy switches and spawn() (spawn.py).

    import ampc.multiprocessing as mp
    model.share_memory()
    ps = [mp.Process(target=train, args=(model,)) for _ in range(4)]   # Hogwild
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from .reductions import get_all_sharing_strategies, get_sharing_strategy, init_reductions, set_sharing_strategy
from .spawn import ProcessContext, ProcessExitedException, ProcessRaisedException, spawn, start_processes

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException"]
__all__ += multiprocessing.__all__

init_reductions()
