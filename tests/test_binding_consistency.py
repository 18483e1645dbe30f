"""The binding's shared pieces, checked across every function that uses them: the factory size
parser (csrc/python/py_args.c) against PyTorch's errors, and ampc.utils.hooks.RemovableHandle
as every register_*_hook returns it."""
import pickle
from collections import OrderedDict

import pytest

import ampc

torch = pytest.importorskip("torch")

# (name, call with a size argument `s`): every factory that takes a size.
SIZED = [
    ("zeros", lambda m, s: m.zeros(*s)),
    ("ones", lambda m, s: m.ones(s)),
    ("empty", lambda m, s: m.empty(*s)),
    ("full", lambda m, s: m.full(s, 1.5)),
    ("rand", lambda m, s: m.rand(*s)),
    ("randn", lambda m, s: m.randn(size=s)),
    ("randint", lambda m, s: m.randint(5, s)),
    ("randint", lambda m, s: m.randint(0, 5, size=s)),
    ("normal", lambda m, s: m.normal(0.0, 1.0, s)),
    ("new_zeros", lambda m, s: m.ones(1).new_zeros(s)),
    ("new_full", lambda m, s: m.ones(1).new_full(s, 2.0)),
]


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


@pytest.mark.parametrize("name,make", SIZED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SIZED)])
@pytest.mark.parametrize("size", [(2, -3), (-1,), (4, 0, -2)])
def test_negative_size_matches_torch(name, make, size):
    want = _error(lambda: make(torch, size))
    got = _error(lambda: make(ampc, size))
    assert type(got) is type(want) is RuntimeError
    # PyTorch's wording, named by the op: "randn(): Trying to create tensor with negative ..."
    neg = next(d for d in size if d < 0)
    message = f"Trying to create tensor with negative dimension {neg}: [{', '.join(map(str, size))}]"
    assert str(got) == f"{name}(): {message}"
    # torch.zeros alone words it differently ("zeros: Dimension size must be non-negative.")
    assert str(want) == message or name == "zeros", str(want)


@pytest.mark.parametrize("name,make", SIZED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SIZED)])
def test_valid_sizes_give_torch_shapes(name, make):
    for size in [(2, 3), (0,), (1, 0, 4)]:
        assert tuple(make(ampc, size).shape) == tuple(make(torch, size).shape)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_errors_name_the_op(name):
    f = getattr(ampc, name)
    with pytest.raises(TypeError, match=rf"^{name}\(\) missing 1 required positional argument: 'size'"):
        f()
    with pytest.raises(TypeError, match=rf"^{name}\(\) got multiple values for argument 'size'"):
        f(2, size=(3,))
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'size' must be tuple of ints"):
        f(2, 3.0)
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'colour'"):
        f(2, colour=1)


def test_requires_grad_on_integer_factories():
    # the random factories use PyTorch's factory wording; the creation ones the core's
    # (pinned by test_errors_tensor.py)
    for fn in (lambda m: m.randint(3, (2,), requires_grad=True), lambda m: m.randperm(3, requires_grad=True)):
        want = _error(lambda: fn(torch))
        got = _error(lambda: fn(ampc))
        assert type(got) is type(want) and str(got) == str(want)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ampc.zeros(2, dtype=ampc.int64, requires_grad=True)


# ---------------------------------------------------------------- RemovableHandle


def test_one_removable_handle_class():
    from ampc.utils.hooks import RemovableHandle

    m = ampc.nn.Linear(2, 2)
    opt = ampc.optim.SGD(m.parameters(), lr=0.1)
    x = ampc.ones(2, requires_grad=True)
    handles = [
        m.register_forward_hook(lambda *a: None),
        m.register_forward_pre_hook(lambda *a: None),
        opt.register_step_pre_hook(lambda *a: None),
        opt.register_step_post_hook(lambda *a: None),
        x.register_hook(lambda g: None),
    ]
    assert all(type(h) is RemovableHandle for h in handles)
    assert len({h.id for h in handles}) == len(handles)  # one counter for all
    assert ampc.nn.modules.module.RemovableHandle is RemovableHandle


def test_handle_remove_and_context_manager():
    from ampc.utils.hooks import RemovableHandle

    d, extra = OrderedDict(), OrderedDict()
    h = RemovableHandle(d, extra_dict=extra)
    d[h.id], extra[h.id] = "hook", True
    with h as same:
        assert same is h
    assert not d and not extra
    h.remove()  # twice is fine
    h2 = RemovableHandle(d, extra_dict=[extra, OrderedDict()])
    assert h2.id > h.id and len(h2.extra_dict_ref) == 2


def test_handle_does_not_keep_its_dict_alive():
    from ampc.utils.hooks import RemovableHandle

    d = OrderedDict()
    h = RemovableHandle(d)
    d[h.id] = 1
    del d
    assert h.hooks_dict_ref() is None
    h.remove()


def test_handle_pickles_like_torch():
    from ampc.utils.hooks import RemovableHandle

    d = OrderedDict()
    h = RemovableHandle(d, extra_dict=OrderedDict())
    d[h.id] = 1
    t = torch.utils.hooks.RemovableHandle(OrderedDict(), extra_dict=OrderedDict())
    assert len(h.__getstate__()) == len(t.__getstate__())
    h2 = pickle.loads(pickle.dumps(h))
    assert h2.id == h.id and RemovableHandle.next_id > h.id
    h2.remove()  # its dicts died with the unpickling, as in torch: nothing to do


def test_tensor_hook_handle_removes_and_survives_the_tensor_object():
    x = ampc.ones(3, requires_grad=True)
    seen = []
    y = x * 2
    h = y.register_hook(lambda g: seen.append(1) or g * 10)
    loss = y.sum()
    del y  # the hook lives with the graph, as in torch
    loss.backward(retain_graph=True)
    assert seen == [1] and x.grad.tolist() == [20.0] * 3
    h.remove()
    x.grad = None
    loss.backward()
    assert seen == [1] and x.grad.tolist() == [2.0] * 3
    with x.register_hook(lambda g: g + 1):
        (x * 1).sum().backward()
    x.grad = None
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0] * 3


def test_module_hook_handle_clears_with_kwargs_entry():
    m = ampc.nn.Linear(2, 2)
    h = m.register_forward_pre_hook(lambda mod, args, kwargs: None, with_kwargs=True)
    assert h.id in m._forward_pre_hooks and h.id in m._forward_pre_hooks_with_kwargs
    h.remove()
    assert h.id not in m._forward_pre_hooks and h.id not in m._forward_pre_hooks_with_kwargs


def test_optimizer_hook_handle_removes():
    p = ampc.nn.Parameter(ampc.ones(2))
    opt = ampc.optim.SGD([p], lr=0.1)
    calls = []
    h = opt.register_step_pre_hook(lambda *a: calls.append(1))
    p.grad = ampc.ones(2)
    opt.step()
    h.remove()
    opt.step()
    assert calls == [1]
