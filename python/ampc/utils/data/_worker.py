"""DataLoader worker processes (torch.utils.data's _utils/worker.py and the multiprocessing
iterator of dataloader.py), for DataLoader(num_workers > 0).

Each worker is a process of the loader's multiprocessing context (fork on Linux by default, as
torch) with its own copy of the dataset. The main process hands out work as (task index, batch
indices) on one queue per worker, round-robin over the workers still active, keeping
prefetch_factor tasks in flight per worker; workers answer (task index, batch) on one shared
result queue, and the main process yields the batches in task order. Tensors cross the queue in
shared memory (ampc.multiprocessing's reductions). Seeds: base_seed is drawn from the loader's
generator once per iterator, worker i seeds Python's random and ampc with base_seed + i, as
torch. An IterableDataset runs whole in every worker: each one's batches are that worker's copy
of the stream (get_worker_info() tells a dataset how to shard itself); a worker whose stream
ends stops receiving work.
"""
import itertools
import queue
import random
import threading

from ... import _C

__all__ = ["WorkerInfo", "get_worker_info"]

_POLL_S = 0.5  # how often a waiting main process checks that its workers are alive

_worker_info = None


class WorkerInfo:
    """What get_worker_info() returns in a worker: id, num_workers, seed, dataset (this process's
    copy), worker_method. Read-only, as torch's."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


def get_worker_info():
    """The WorkerInfo of the DataLoader worker this runs in; None in the main process."""
    return _worker_info


class _IterableStop:
    """A worker's answer when its IterableDataset stream has ended."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at a new epoch: restart the IterableDataset stream."""


class _ExceptionWrapper:
    """An exception raised in a worker, carried to the main process and raised there with the
    worker's traceback in its message (torch's ExceptionWrapper)."""

    def __init__(self, exc, where):
        import traceback

        self.exc_type = type(exc)
        self.msg = f"Caught {self.exc_type.__name__} {where}.\nOriginal {traceback.format_exc()}"

    def reraise(self):
        try:
            exception = self.exc_type(self.msg)
        except Exception:
            raise RuntimeError(self.msg) from None
        raise exception


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        ds = self.dataset
        if self.auto_collation:
            getitems = getattr(ds, "__getitems__", None)
            data = getitems(index) if getitems is not None else [ds[i] for i in index]
        else:
            data = ds[index]
        return self.collate_fn(data)


class _IterFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, batch_size):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in range(batch_size):
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < batch_size):
            raise StopIteration
        return self.collate_fn(data)


def _worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                 base_seed, init_fn, worker_id, num_workers):
    """The body of one worker process."""
    global _worker_info
    try:
        _C.set_num_threads(1)  # as torch: workers do not fight over the cores with OpenMP
        seed = base_seed + worker_id
        random.seed(seed)
        _C.manual_seed(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset,
                                  worker_method="multiprocessing")
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = (_IterFetcher if iterable else _MapFetcher)(dataset, auto_collation, collate_fn, drop_last)
        except Exception as e:
            init_exception = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
        stream_ended = False
        while True:
            try:
                r = index_queue.get(timeout=_POLL_S)
            except queue.Empty:
                if done_event.is_set():
                    break
                continue
            if r is None:  # the main process's request to exit
                break
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))  # the acknowledgement: every task before it was answered
                stream_ended = False
                if iterable and init_exception is None:
                    fetcher = _IterFetcher(dataset, auto_collation, collate_fn, drop_last)
                continue
            if done_event.is_set() or stream_ended:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and iterable:
                        data = _IterableStop(worker_id)
                        stream_ended = True
                    else:
                        data = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()


class _MultiProcessIter:
    """The iterator of a DataLoader with num_workers > 0 (torch's _MultiProcessingDataLoaderIter)."""

    def __init__(self, loader):
        from ... import multiprocessing as amp_mp

        self._loader = loader
        self._iterable = loader._iterable
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor if loader.prefetch_factor is not None else 2
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._pin = loader.pin_memory and _C._cuda_is_available()
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = amp_mp.get_context()
        elif isinstance(ctx, str):
            ctx = amp_mp.get_context(ctx)
        self._done_event = ctx.Event()
        self._data_queue = ctx.Queue()
        self._index_queues, self._workers = [], []
        base_seed = self._base_seed()
        for i in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker_loop,
                            args=(self._iterable, loader.dataset, iq, self._data_queue, self._done_event,
                                  loader._auto_collation, loader.collate_fn, loader.drop_last, base_seed,
                                  loader.worker_init_fn, i, self._num_workers))
            w.daemon = True
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._shutdown = False
        self._reset(first_iter=True)

    def _base_seed(self):
        gen = self._loader.generator
        kw = {} if gen is None else {"generator": gen}
        return int(_C.empty((), dtype=_C.int64, device="cpu").random_(**kw).item())

    def _reset(self, first_iter=False):
        self._send_idx = 0   # the next task to hand out
        self._rcvd_idx = 0   # the next task to yield
        self._task_info = {}  # task -> (worker,) while in flight, (worker, data) once received early
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = iter(range(0))
        self._next_worker = 0
        if self._iterable:
            self._requests = itertools.repeat(self._loader.batch_size)
        elif self._loader.batch_sampler is not None:
            self._requests = iter(self._loader.batch_sampler)
        else:
            self._requests = iter(self._loader.sampler)
        if not first_iter:  # persistent workers: a new epoch
            for iq in self._index_queues:
                iq.put(_ResumeIteration())
            resumed = self._num_workers
            while resumed > 0:  # answers of the last epoch's leftover tasks are dropped
                if isinstance(self._get_data()[0], _ResumeIteration):
                    resumed -= 1
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def _try_put_index(self):
        try:
            index = next(self._requests)
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, round-robin
            worker = self._next_worker
            self._next_worker = (self._next_worker + 1) % self._num_workers
            if self._workers_status[worker]:
                break
        else:
            return  # no active worker: the streams have all ended
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        """One (task, data) from the result queue, waiting at most `timeout` seconds when set,
        and failing when a worker died."""
        waited = 0.0
        while True:
            step = _POLL_S if self._timeout <= 0 else min(_POLL_S, max(self._timeout - waited, 1e-3))
            try:
                return self._data_queue.get(timeout=step)
            except queue.Empty:
                waited += step
                if self._timeout > 0 and waited >= self._timeout:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
                dead = [w for w in self._workers if not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        if self._pin:
            from .dataloader import pin_memory

            data = pin_memory(data)
        return data

    def __next__(self):
        while True:
            # skip tasks of workers whose stream ended (their answer was _IterableStop)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:  # has data, or may still get it
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            if self._rcvd_idx >= self._send_idx:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:  # it came early
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableStop):
                self._workers_status[data.worker_id] = False  # its tasks are skipped above
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for iq in self._index_queues:
            try:
                iq.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=5.0)
            if w.is_alive():
                w.terminate()
        for iq in self._index_queues:
            iq.cancel_join_thread()
            iq.close()
        self._data_queue.cancel_join_thread()
        self._data_queue.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass
