"""torch.multiprocessing.spawn: run fn(i, *args) in nprocs new processes and wait for them.

A child that raises sends its traceback to the parent through a per-process queue; the parent
then stops the others and raises ProcessRaisedException with it (ProcessExitedException for a
child that died without one, e.g. killed by a signal), as torch does.
"""
import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback


class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A child process exited without raising (a nonzero exit code or a signal)."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Waits for the processes; True when all finished well, False on timeout; raises for
        the first that failed (after terminating the others)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            i = self.sentinels.pop(sentinel)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        p = self.processes[failed]
        if not self.error_queues[failed].empty():
            tb = self.error_queues[failed].get()
            raise ProcessRaisedException(f"\n\n-- Process {failed} terminated with the following error:\n{tb}",
                                         failed, p.pid)
        if p.exitcode < 0:
            name = signal.Signals(-p.exitcode).name
            raise ProcessExitedException(f"process {failed} terminated with signal {name}", failed, p.pid,
                                         p.exitcode, name)
        raise ProcessExitedException(f"process {failed} terminated with exit code {p.exitcode}", failed, p.pid,
                                     p.exitcode)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    ctx = multiprocessing.get_context(start_method)
    processes, error_queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        error_queues.append(q)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """fn(i, *args) for i in range(nprocs), each in a new process (start_method 'spawn' by default)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
