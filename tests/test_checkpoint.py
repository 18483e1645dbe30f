"""ampc.utils.checkpoint (torch.utils.checkpoint): the rerun reproduces the forward's autocast and
RNG state, so checkpointed AMP models train with the same gradients as unchecked ones and a
smaller peak; both variants (use_reentrant True/False), checkpoint_sequential, torch's warnings
and errors, and parity of the gradients with torch's own checkpoint."""
import contextlib
import warnings

import numpy as np
import pytest
import torch

import ampc
import ampc.nn as nn
from ampc.utils.checkpoint import checkpoint, checkpoint_sequential

MODES = [True, False]


def _grads(model, x):
    return [p.grad.clone() for p in model.parameters()] + ([x.grad.clone()] if x.grad is not None else [])


def _amp_step(model, x, ckpt, device_type="cpu", dtype=ampc.bfloat16, seed=1):
    model.zero_grad()
    x.grad = None
    ampc.manual_seed(seed)
    with ampc.autocast(device_type, dtype=dtype):
        y = model(x) if ckpt is None else checkpoint(model, x, use_reentrant=ckpt)
    assert y.dtype == dtype
    y.float().pow(2).sum().backward()
    return _grads(model, x)


def _mlp(dropout=0.25):
    ampc.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Dropout(dropout), nn.Linear(32, 32), nn.SiLU(),
                         nn.Dropout(dropout), nn.Linear(32, 6))


@pytest.mark.parametrize("reentrant", MODES)
def test_amp_mlp_with_dropout_same_grads(reentrant):
    model = _mlp()
    x = ampc.randn(5, 12).requires_grad_()
    ref = _amp_step(model, x, None)
    got = _amp_step(model, x, reentrant)
    for r, g in zip(ref, got):
        assert bool((r == g).all())  # same kernels, same masks, same dtypes: bit-identical


@pytest.mark.parametrize("reentrant", MODES)
def test_amp_transformer_same_grads_and_less_memory(reentrant):
    ampc.manual_seed(0)
    layers = nn.ModuleList(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True) for _ in range(4))

    def run(ckpt):
        for p in layers.parameters():
            p.grad = None
        ampc._C._cpu_reset_peak()
        ampc.manual_seed(3)
        h = x
        with ampc.autocast("cpu", dtype=ampc.bfloat16):
            for layer in layers:
                h = layer(h) if ckpt is None else checkpoint(layer, h, use_reentrant=ckpt)
            loss = h.float().pow(2).mean()
        loss.backward()
        return [p.grad.clone() for p in layers.parameters()], ampc._C._cpu_memory_stats()["peak_allocated"]

    x = ampc.randn(4, 48, 32).requires_grad_()
    run(None)  # the first step allocates the grads; compare steady-state steps
    ref, peak_ref = run(None)
    got, peak = run(reentrant)
    for r, g in zip(ref, got):
        assert bool((r == g).all())
    assert peak < 0.85 * peak_ref, (peak, peak_ref)


def test_recompute_restores_autocast_state():
    seen = []

    def fn(x, w):
        y = x @ w
        seen.append((y.dtype, ampc.is_autocast_enabled("cpu")))
        return y

    for reentrant in MODES:
        seen.clear()
        x = ampc.randn(3, 4).requires_grad_()
        w = ampc.randn(4, 2).requires_grad_()
        with ampc.autocast("cpu", dtype=ampc.bfloat16):
            y = checkpoint(fn, x, w, use_reentrant=reentrant)
        assert not ampc.is_autocast_enabled("cpu")
        y.float().sum().backward()  # backward outside the region: the rerun must re-enter it
        assert seen == [(ampc.bfloat16, True), (ampc.bfloat16, True)]
        # and a forward without autocast reruns without it, inside a region or not
        seen.clear()
        y = checkpoint(fn, x, w, use_reentrant=reentrant)
        with ampc.autocast("cpu", dtype=ampc.bfloat16):
            y.sum().backward()
        assert seen == [(ampc.float32, False), (ampc.float32, False)]


@pytest.mark.parametrize("reentrant", MODES)
def test_rng_state_preserved_and_restored(reentrant):
    model = _mlp(0.5)
    model.train()
    x = ampc.randn(6, 12).requires_grad_()
    ampc.manual_seed(5)
    y = checkpoint(model, x, use_reentrant=reentrant)
    after_forward = ampc.get_rng_state()
    y.sum().backward()
    # the rerun drew the forward's masks from a forked generator: the caller's stream is untouched
    assert bool((ampc.get_rng_state() == after_forward).all())
    g = _grads(model, x)
    model.zero_grad()
    x.grad = None
    ampc.manual_seed(5)
    model(x).sum().backward()
    for a, b in zip(g, _grads(model, x)):
        assert bool((a == b).all())


def test_preserve_rng_state_false_draws_new_masks():
    model = _mlp(0.5)
    x = ampc.randn(64, 12).requires_grad_()
    ampc.manual_seed(5)
    y = checkpoint(model, x, use_reentrant=False, preserve_rng_state=False)
    ampc.manual_seed(99)  # the rerun draws from here
    y.sum().backward()
    g = _grads(model, x)
    model.zero_grad()
    x.grad = None
    ampc.manual_seed(5)
    model(x).sum().backward()
    assert any(not bool((a == b).all()) for a, b in zip(g, _grads(model, x)))


def test_use_reentrant_warning_and_argument_errors():
    model = nn.Linear(3, 3)
    x = ampc.randn(2, 3, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(model, x)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        checkpoint_sequential(nn.Sequential(model, nn.ReLU()), 2, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(model, x, use_reentrant=False)
        checkpoint(model, x, use_reentrant=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda t, scale: t * scale, x, use_reentrant=True, scale=2.0)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(model, x, use_reentrant=True, context_fn=lambda: (contextlib.nullcontext(),) * 2)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint_sequential(nn.Sequential(model), 1, x, use_reentrant=False, foo=1)


def test_reentrant_warns_when_no_input_requires_grad():
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(nn.Linear(3, 3), ampc.randn(2, 3), use_reentrant=True)
    assert not y.requires_grad  # as in torch: nothing to backpropagate through


def test_non_reentrant_params_only_kwargs_nested_outputs_and_autograd_grad():
    ampc.manual_seed(0)
    lin = nn.Linear(4, 4)
    x = ampc.randn(3, 4)  # requires no grad: the parameters still get theirs

    def fn(t, *, scale):
        h = lin(t)
        return {"out": h * scale, "aux": (h.sum(), 7)}

    out = checkpoint(fn, x, use_reentrant=False, scale=2.0)
    assert out["aux"][1] == 7
    loss = out["out"].pow(2).sum() + out["aux"][0]
    gw, gb = ampc.autograd.grad(loss, [lin.weight, lin.bias])
    h = lin(x)
    ew, eb = ampc.autograd.grad((h * 2.0).pow(2).sum() + h.sum(), [lin.weight, lin.bias])
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), eb.numpy(), rtol=1e-6)
    assert lin.weight.grad is None  # autograd.grad does not accumulate


def test_non_reentrant_context_fn_used_for_forward_and_recompute():
    log = []

    @contextlib.contextmanager
    def tag(name):
        log.append(name + " in")
        yield
        log.append(name + " out")

    x = ampc.randn(2, 3, requires_grad=True)
    y = checkpoint(lambda t: t.sin(), x, use_reentrant=False, context_fn=lambda: (tag("fwd"), tag("re")))
    y.sum().backward()
    assert log == ["fwd in", "fwd out", "re in", "re out"]
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)


def test_no_grad_forward_just_runs():
    lin = nn.Linear(3, 2)
    with ampc.no_grad():
        for reentrant in MODES:
            y = checkpoint(lin, ampc.randn(4, 3, requires_grad=True), use_reentrant=reentrant)
            assert not y.requires_grad


@pytest.mark.parametrize("reentrant", MODES)
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential_matches(reentrant, segments):
    model = _mlp(0.0)
    x = ampc.randn(4, 12).requires_grad_()
    model(x).sum().backward()
    ref = _grads(model, x)
    model.zero_grad()
    x.grad = None
    y = checkpoint_sequential(model, segments, x, use_reentrant=reentrant)
    y.sum().backward()
    for r, g in zip(ref, _grads(model, x)):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6, atol=1e-7)
    # a list of modules works too
    model.zero_grad()
    x.grad = None
    checkpoint_sequential(list(model), segments, x, use_reentrant=reentrant).sum().backward()
    for r, g in zip(ref, _grads(model, x)):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("reentrant", MODES)
def test_parity_with_torch_checkpoint(reentrant):
    """Same weights, same inputs: ampc's checkpointed grads equal torch's checkpointed grads."""
    tm = torch.nn.Sequential(torch.nn.Linear(6, 10), torch.nn.Tanh(), torch.nn.Linear(10, 3))
    am = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 3))
    am.load_state_dict({k: ampc.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    xn = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    tx = torch.tensor(xn, requires_grad=True)
    ax = ampc.tensor(xn, requires_grad=True)
    torch.utils.checkpoint.checkpoint(tm, tx, use_reentrant=reentrant).pow(2).sum().backward()
    checkpoint(am, ax, use_reentrant=reentrant).pow(2).sum().backward()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (n, ap), tp in zip(am.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(ap.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)


def test_module_namespace():
    import ampc.utils.checkpoint as c
    # torch's names but its selective-checkpointing ones (they need torch's dispatch modes)
    ours = {"checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "check_backward_validity",
            "detach_variable", "get_device_states", "set_device_states", "noop_context_fn",
            "set_checkpoint_early_stop", "DefaultDeviceType", "set_checkpoint_debug_enabled"}
    assert ours <= set(torch.utils.checkpoint.__all__)
    assert set(c.__all__) == ours and all(hasattr(c, n) for n in ours)
    assert ampc.utils.checkpoint is c


def _edges(t):
    return [n for n, _ in t.grad_fn.next_functions if n is not None]


def test_non_reentrant_node_reaches_only_its_own_segment():
    """The node of a segment has edges to its tensor inputs and the leaves of its own graph only
    (the walk stops at the inputs' nodes: a chain of segments stays linear, not quadratic), and a
    leaf mixed in with a non-leaf input is found."""
    layers = [nn.Linear(3, 3) for _ in range(4)]
    h = ampc.randn(2, 3, requires_grad=True)
    for layer in layers:
        h = checkpoint(layer, h * 1.0, use_reentrant=False)  # a non-leaf input for every segment
        assert len(_edges(h)) == 3  # the input, weight, bias
    w = ampc.randn(3, requires_grad=True)
    x = ampc.randn(3, requires_grad=True) * 2
    y = checkpoint(lambda t: t * w, x, use_reentrant=False)
    assert len(_edges(y)) == 2
    (gw,) = ampc.autograd.grad(y.sum(), [w])
    np.testing.assert_allclose(gw.numpy(), x.detach().numpy())
