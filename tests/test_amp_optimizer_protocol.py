"""GradScaler's contract with optimizers that declare `_step_supports_amp_scaling` (issue 14),
side by side with torch: a third-party optimizer sees `grad_scale` and `found_inf` tensors and
grads that are still scaled, or, when its step takes `grad_scaler`, the scaler itself (with
torch's FutureWarning); after unscale_ it gets grad_scale None; a user-set grad_scale multiplies.
ampc's own optimizers keep their sync-free path: grads unscaled, as torch's default optimizers
see them."""
import warnings

import numpy as np
import pytest
import torch

import ampc


def _third_party(M, legacy):
    """An optimizer written against torch's contract: plain SGD that divides by grad_scale itself
    and skips on found_inf; it records what GradScaler handed it."""

    class FusedSGD(M.optim.Optimizer):
        _step_supports_amp_scaling = True

        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})
            self.seen = []

        def _apply(self, grad_scale, found_inf):
            self.seen.append((None if grad_scale is None else float(grad_scale), float(found_inf),
                              [p.grad.clone() for g in self.param_groups for p in g["params"]]))
            if float(found_inf):
                return
            for g in self.param_groups:
                for p in g["params"]:
                    grad = p.grad if grad_scale is None else p.grad / grad_scale
                    p.data.add_(grad, alpha=-g["lr"])

        if legacy:
            def step(self, closure=None, grad_scaler=None):
                self.got_scaler = grad_scaler is not None
                grad_scaler.unscale_(self)
                found = sum(v for v in grad_scaler._found_inf_per_device(self).values())
                self._apply(None, found)
        else:
            def step(self, closure=None):
                self._apply(self.grad_scale, self.found_inf)

    return FusedSGD


def _run(M, legacy, unscale_first, poison, user_scale=None):
    w = M.nn.Parameter(M.tensor([1.0, -2.0, 3.0]))
    opt = _third_party(M, legacy)([w], lr=0.1)
    scaler = M.amp.GradScaler("cpu", init_scale=8.0)
    loss = (w * M.tensor([0.5, 1.0, float("inf") if poison else 2.0])).sum()
    scaler.scale(loss).backward()
    if unscale_first:
        scaler.unscale_(opt)
    if user_scale is not None:
        opt.grad_scale = M.tensor(user_scale)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler.step(opt)
    scaler.update()
    attrs_left = hasattr(opt, "found_inf"), hasattr(opt, "grad_scale")
    seen = [(gs, fi, [g.tolist() for g in grads]) for gs, fi, grads in opt.seen]
    return (w.detach().tolist(), seen, [g.tolist() for g in [w.grad]], scaler.get_scale(), attrs_left,
            [(c.category.__name__, str(c.message)) for c in caught], getattr(opt, "got_scaler", None))


# (legacy, unscale_first): a legacy step unscales itself, so unscale_ before it would raise in both
@pytest.mark.parametrize("legacy,unscale_first", [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("poison", [False, True])
def test_third_party_optimizer_gets_torchs_protocol(legacy, unscale_first, poison):
    a = _run(ampc, legacy, unscale_first, poison)
    t = _run(torch, legacy, unscale_first, poison)
    assert a == t


def test_user_grad_scale_multiplies():
    a = _run(ampc, False, False, False, user_scale=2.0)
    t = _run(torch, False, False, False, user_scale=2.0)
    assert a[1] == t[1] and a[1][0][0] == 16.0


def test_grad_scaler_parameter_is_visible_through_the_step_hooks():
    import inspect
    cls = _third_party(ampc, True)
    assert "grad_scaler" in inspect.signature(cls.step).parameters
    assert getattr(cls.step, "_ampc_hooked", False)


def test_ampc_optimizers_keep_grads_unscaled_like_torchs_default_path():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    results = []
    for M in (ampc, torch):
        M.manual_seed(0)
        lin = M.nn.Linear(3, 2)
        opt = M.optim.Adam(lin.parameters(), lr=0.01)
        scaler = M.amp.GradScaler("cpu", init_scale=1024.0)
        loss = lin(M.tensor(x, dtype=M.float32)).pow(2).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        results.append((lin.weight.grad.detach().numpy().copy(), lin.weight.detach().numpy().copy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)  # unscaled in both
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6, atol=1e-7)
