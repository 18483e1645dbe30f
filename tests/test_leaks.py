"""Graphs that hold Python objects are freed: custom Functions, hooks and graphs kept across steps
leave no tensors, nodes or allocator bytes behind (issue 19's leak test). Counted by the core's own
live-object counters, after gc.collect() where a Python reference cycle is involved (torch frees
the same cycles)."""
import gc

import pytest

import ampc
from helpers import ExpOut  # saves its own output


def live():
    gc.collect()
    return ampc._C._live_tensors(), ampc._C._live_nodes()


class KeepsOutputOnCtx(ampc.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2
        ctx.out = y  # a cycle: y -> grad_fn (ctx) -> ctx.__dict__ -> y
        return y

    @staticmethod
    def backward(ctx, g):
        return g * 2


@pytest.mark.parametrize("fn", [ExpOut, KeepsOutputOnCtx])
@pytest.mark.parametrize("with_backward", [False, True])
def test_custom_function_outputs_are_freed(fn, with_backward):
    x = ampc.randn(64, requires_grad=True)
    before = live()
    for _ in range(100):
        y = fn.apply(x)
        if with_backward:
            y.sum().backward()
    del y
    x.grad = None
    assert live() == before


def test_saved_tensors_still_readable_after_forward():
    x = ampc.tensor([0.5, 1.0], requires_grad=True)
    y = ExpOut.apply(x)
    (saved,) = y.grad_fn.saved_tensors
    assert saved.tolist() == y.tolist()
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx(y.tolist())


def test_hook_whose_closure_holds_its_own_leaf_is_freed():
    before = live()
    for _ in range(50):
        a = ampc.randn(16, requires_grad=True)
        a.register_hook(lambda g, a=a: g)
        (a * 3).sum().backward()
    del a
    assert live() == before


def test_hook_on_a_non_leaf_holding_its_tensor_is_freed():
    x = ampc.randn(16, requires_grad=True)
    before = live()
    for _ in range(50):
        h = x * 2
        h.register_hook(lambda g, h=h: g * 1)
        h.sum().backward()
    del h
    x.grad = None
    assert live() == before


def test_graphs_kept_across_steps_are_freed_when_dropped():
    w = ampc.randn(8, 8, requires_grad=True)
    before = live()
    kept = []
    for _ in range(20):
        kept.append((ampc.randn(4, 8) @ w).tanh().sum())  # a graph per step, none backpropagated
    del kept
    assert live() == before


def test_amp_training_holds_memory_flat():
    """Steps of fp16 autocast + GradScaler: tensors, nodes and allocator bytes back to where the
    first step left them."""
    ampc.manual_seed(0)
    model = ampc.nn.Sequential(ampc.nn.Linear(32, 64), ampc.nn.ReLU(), ampc.nn.Linear(64, 10))
    opt = ampc.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = ampc.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    x, y = ampc.randn(16, 32), ampc.randint(0, 10, (16,))

    def step():
        opt.zero_grad(set_to_none=True)
        with ampc.autocast("cpu", dtype=ampc.float16):
            loss = ampc.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(3):  # optimizer state and scaler buffers exist from here on
        step()
    def held():
        stats = ampc._C._cpu_memory_stats()
        return live(), stats["allocated"], stats["active_blocks"]

    before, allocs = held(), ampc._C._cpu_memory_stats()["num_allocs"]
    for _ in range(2000):
        step()
    assert held() == before
    assert ampc._C._cpu_memory_stats()["num_allocs"] > allocs  # the steps did allocate (and free)


def test_cpu_allocator_counts_frees_and_active_blocks():
    gc.collect()
    s0 = ampc._C._cpu_memory_stats()
    x = ampc.empty(1000)
    s1 = ampc._C._cpu_memory_stats()
    assert (s1["num_allocs"] - s0["num_allocs"], s1["active_blocks"] - s0["active_blocks"]) == (1, 1)
    del x
    s2 = ampc._C._cpu_memory_stats()
    assert (s2["num_frees"] - s1["num_frees"], s2["active_blocks"] - s0["active_blocks"]) == (1, 0)
    assert s2["allocated"] == s0["allocated"]
