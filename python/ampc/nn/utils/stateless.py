"""nn.utils.stateless.functional_call (also torch.func.functional_call): calls a module with
some of its parameters and buffers replaced by the given tensors for the duration of the call,
so gradients flow to those tensors (meta-learning, ensembling, per-sample gradients)."""
import contextlib

from ... import _C

__all__ = ["functional_call"]


def _split(name):
    prefix, _, attr = name.rpartition(".")
    return prefix, attr


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False, stack_weights=False):
    """Swaps each named tensor into its owner's _parameters / _buffers (or plain attribute) and
    restores the originals on exit. tie_weights: a tensor given for one name of tied weights is
    used for all of them."""
    given = dict(parameters_and_buffers)
    if tie_weights:
        # names that share one tensor with a given name get the same replacement
        all_named = dict(module.named_parameters(remove_duplicate=False))
        all_named.update(dict(module.named_buffers(remove_duplicate=False)))
        by_id = {}
        for n, t in all_named.items():
            by_id.setdefault(id(t), []).append(n)
        for n in list(given):
            if n in all_named:
                for tied in by_id[id(all_named[n])]:
                    if tied in given and given[tied] is not given[n]:
                        raise ValueError(f"functional_call got multiple values for keys ['{n}', '{tied}'], which are "
                                         "tied. Consider using tie_weights=False")
                    given.setdefault(tied, given[n])
    if strict:
        names = set(n for n, _ in module.named_parameters(remove_duplicate=False)) | \
            set(n for n, _ in module.named_buffers(remove_duplicate=False))
        missing = sorted(names - set(given))
        unexpected = sorted(set(given) - names)
        if missing or unexpected:
            msgs = []
            if unexpected:
                msgs.append("Unexpected key(s): {}.".format(", ".join(map(repr, unexpected))))
            if missing:
                msgs.append("Missing key(s): {}.".format(", ".join(map(repr, missing))))
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                 "\n\t".join(msgs)))
    saved = []
    try:
        for name, tensor in given.items():
            prefix, attr = _split(name)
            owner = module.get_submodule(prefix)
            if attr in owner._parameters:
                saved.append((owner, "_parameters", attr, owner._parameters[attr]))
                owner._parameters[attr] = tensor
            elif attr in owner._buffers:
                saved.append((owner, "_buffers", attr, owner._buffers[attr]))
                owner._buffers[attr] = tensor
            else:
                had = attr in owner.__dict__
                saved.append((owner, None, attr, owner.__dict__.get(attr) if had else _MISSING))
                object.__setattr__(owner, attr, tensor)
        yield
    finally:
        for owner, registry, attr, old in reversed(saved):
            if registry is None:
                if old is _MISSING:
                    owner.__dict__.pop(attr, None)
                else:
                    object.__setattr__(owner, attr, old)
            else:
                getattr(owner, registry)[attr] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the named parameters/buffers of the dict (or the union of a
    sequence of dicts) in place of the module's own."""
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        merged = {}
        for d in parameter_and_buffer_dicts:
            for k, v in d.items():
                if k in merged:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of functional call is "
                                     "ambiguous")
                merged[k] = v
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    for k, v in merged.items():
        if not isinstance(v, _C.Tensor):
            raise TypeError(f"functional_call: the value for '{k}' is a {type(v).__name__}, not a Tensor")
    with _reparametrize_module(module, merged, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
