"""ampc.multiprocessing (torch.multiprocessing): share_memory_/is_shared, tensors sent to child
processes sharing memory under the fork, spawn and forkserver start methods (Process args,
Queue, Pool, both sharing strategies), Hogwild training of a shared model, spawn(), and no
shared memory or fd left behind."""
import os

import numpy as np
import pytest

import ampc
import ampc.multiprocessing as mp
import ampc.nn as nn

METHODS = ["fork", "spawn", "forkserver"]


def _fds():
    return len(os.listdir("/proc/self/fd"))


def _dev_shm():
    return sorted(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else []


# ---------------------------------------------------------------- in one process


def test_share_memory_moves_the_storage_in_place():
    base = ampc.arange(12, dtype=ampc.float32).reshape(3, 4)
    view = base.t()[1:]
    assert not base.is_shared() and not view.is_shared()
    assert base.share_memory_() is base
    assert base.is_shared() and view.is_shared()  # every view of the storage moved with it
    assert base.tolist() == np.arange(12).reshape(3, 4).tolist() and view.tolist() == base.t()[1:].tolist()
    base[0, 1] = -5.0
    assert view[0, 0].item() == -5.0  # still one storage
    base.share_memory_()  # already shared: a no-op
    assert base.is_shared()
    for dt in (ampc.float16, ampc.bfloat16, ampc.int64, ampc.bool, ampc.uint8):
        t = ampc.ones(3, dtype=dt).share_memory_()
        assert t.is_shared() and t.dtype == dt and t.tolist() == ampc.ones(3, dtype=dt).tolist()
    empty = ampc.zeros(0).share_memory_()
    assert empty.is_shared() and empty.shape == (0,)
    g = ampc.from_numpy(np.arange(4.0))  # memory borrowed from NumPy is copied out, then released
    assert g.share_memory_().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_module_share_memory():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    params = list(model.parameters())
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters()) and all(b.is_shared() for b in model.buffers())
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]  # the same Parameters


def test_shared_memory_is_freed_with_the_tensor():
    before_fds, before_shm = _fds(), _dev_shm()
    ts = [ampc.ones(1000).share_memory_() for _ in range(20)]
    assert _fds() == before_fds + 20  # one fd per region, held by its storage
    views = [t[1:] for t in ts]
    del ts
    assert _fds() == before_fds + 20  # the views still hold the storages
    del views
    assert _fds() == before_fds and _dev_shm() == before_shm


def test_names_of_torch_multiprocessing():
    for name in ("Process", "Queue", "SimpleQueue", "Pool", "Pipe", "Event", "Lock", "Manager", "set_start_method",
                 "get_start_method", "get_context", "cpu_count", "current_process", "spawn", "start_processes",
                 "ProcessRaisedException", "ProcessExitedException", "get_all_start_methods"):
        assert hasattr(mp, name), name
    assert ampc.multiprocessing is mp
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    with pytest.raises(ValueError, match="unknown strategy 'nope'"):
        mp.set_sharing_strategy("nope")


def test_non_leaf_tensors_that_require_grad_are_refused():
    x = ampc.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        mp.reductions.reduce_tensor(x)


# ---------------------------------------------------------------- across processes


def _add_one(t):
    t.add_(1)


def _double_from_queue(q, done):
    x = q.get()
    x.mul_(2)
    done.put((x.is_shared(), x.dtype == ampc.bfloat16, tuple(x.shape)))


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(old)


@pytest.mark.parametrize("method", METHODS)
def test_child_updates_a_shared_tensor_in_place(method):
    ctx = mp.get_context(method)
    t = ampc.zeros(2, 3)
    t.share_memory_()
    view = t[1]  # a view travels as a view of the same region
    p = ctx.Process(target=_add_one, args=(view,))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert t.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]


@pytest.mark.parametrize("method", METHODS)
def test_a_queue_of_tensors_shares_them(method, strategy):
    ctx = mp.get_context(method)
    q, done = ctx.Queue(), ctx.Queue()
    x = ampc.arange(6, dtype=ampc.bfloat16).reshape(2, 3).t()  # not shared yet, not contiguous
    p = ctx.Process(target=_double_from_queue, args=(q, done))
    p.start()
    q.put(x)  # sending moves x to shared memory
    assert done.get(timeout=60) == (True, True, (3, 2))
    p.join(60)
    assert p.exitcode == 0 and x.is_shared()
    assert x.float().tolist() == (np.arange(6).reshape(2, 3).T * 2).tolist()


def _square_inplace(t):
    t.mul_(t)
    return float(t.sum())


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_tasks_share_their_tensors(method):
    ts = [ampc.full((4,), float(i)) for i in range(4)]
    with mp.get_context(method).Pool(2) as pool:
        sums = pool.map(_square_inplace, ts)
    assert sums == [4.0 * i * i for i in range(4)]
    assert [t.tolist() for t in ts] == [[float(i * i)] * 4 for i in range(4)]


def _hogwild_train(rank, model, steps):
    ampc.manual_seed(rank)
    opt = ampc.optim.SGD(model.parameters(), lr=0.05)
    w_true = ampc.tensor([[1.0, -2.0, 0.5, 3.0]])
    for _ in range(steps):
        x = ampc.randn(16, 4)
        loss = (model(x) - x @ w_true.t()).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_training_updates_the_parents_model(method):
    ampc.manual_seed(0)
    model = nn.Linear(4, 1)
    model.share_memory()
    before = model.weight.detach().clone()
    ctx = mp.get_context(method)
    procs = [ctx.Process(target=_hogwild_train, args=(rank, model, 40)) for rank in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    w = model.weight.detach()
    assert not np.allclose(w.numpy(), before.numpy())  # the children's steps landed here
    np.testing.assert_allclose(w.numpy(), [[1.0, -2.0, 0.5, 3.0]], atol=0.1)  # 120 steps in all converge
    assert abs(model.bias.item()) < 0.1


def _spawned(i, t):
    t[i] = i + 10


def _failing(i):
    if i == 1:
        raise ValueError("child 1 failed on purpose")


def test_spawn_runs_fn_with_the_index_and_reports_errors():
    t = ampc.zeros(3).share_memory_()
    mp.spawn(_spawned, args=(t,), nprocs=3)
    assert t.tolist() == [10.0, 11.0, 12.0]
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: child 1 failed on purpose"):
        mp.spawn(_failing, nprocs=2)
    ctx = mp.spawn(_spawned, args=(t,), nprocs=1, join=False, start_method="fork")
    while not ctx.join():
        pass
    assert len(ctx.pids()) == 1


def _hold(q):
    q.get().add_(1)


def test_no_shared_memory_or_fds_left_after_the_children_exit():
    before_fds, before_shm = _fds(), _dev_shm()
    for method in ("fork", "spawn"):
        ctx = mp.get_context(method)
        q = ctx.Queue()
        t = ampc.zeros(1000)
        p = ctx.Process(target=_hold, args=(q,))
        p.start()
        q.put(t)
        p.join(60)
        assert p.exitcode == 0 and t.sum().item() == 1000.0
        q.close()
        q.join_thread()
        del t, q
    # Queue's own semaphores (sem.mp-*) belong to the stdlib; ampc's regions never have a name there
    assert [n for n in _dev_shm() if not n.startswith("sem.")] == [n for n in before_shm if not n.startswith("sem.")]
    # the resource sharer's listener socket may stay open (stdlib); no region fds may
    left = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            left.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # listdir's own fd
            pass
    assert not [name for name in left if "ampc_shared_storage" in name], left
    assert _fds() <= before_fds + 3


def _produce(q, got, results):
    t = ampc.zeros(4)
    q.put(t)
    got.wait(60)  # torch's rule too: the sender stays alive until the receiver has the tensor
    results.put(t.tolist())  # the parent's in-place write, seen here


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_tensor_made_in_a_child_is_shared_with_the_parent(method, strategy):
    ctx = mp.get_context(method)
    q, results, got = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_produce, args=(q, got, results))
    p.start()
    t = q.get(timeout=60)
    assert t.is_shared()
    t.fill_(7.0)
    got.set()
    assert results.get(timeout=60) == [7.0] * 4
    p.join(60)
    assert p.exitcode == 0
