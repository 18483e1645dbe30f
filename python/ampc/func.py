"""ampc.func: the parts of torch.func that need no function transforms: functional_call (a
module run with substitute parameters/buffers) and stack_module_state (the parameters of
several same-shaped modules stacked along a new leading dim, for model ensembling). vmap, grad,
jacrev and the other transforms are not provided (tools/api_not_planned.txt: functorch)."""
from . import _C
from .nn.utils.stateless import functional_call

__all__ = ["functional_call", "stack_module_state"]


def stack_module_state(models):
    """({name: stacked parameter}, {name: stacked buffer}) of `models`, which must share one
    structure. The stacked parameters are new leaves (requiring grad where the originals do)."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    model0_typ = type(models[0])
    if not all(type(m) is model0_typ for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def construct(named):
        out = {}
        for name, t in named(models[0]):
            stacked = _C.stack([dict(named(m))[name].detach() for m in models])
            out[name] = stacked.requires_grad_(t.requires_grad) if t.is_floating_point() else stacked
        return out

    return (construct(lambda m: m.named_parameters()), construct(lambda m: m.named_buffers()))
