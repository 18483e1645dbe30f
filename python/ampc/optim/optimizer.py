"""Optimizer: PyTorch's base class (torch/optim/optimizer.py) with its behaviour: param groups,
add_param_group, state keyed by parameter, state_dict / load_state_dict in PyTorch's format
({"state": {int: {...}}, "param_groups": [{..., "params": [ints]}]}), zero_grad(set_to_none=True),
step and state-dict hooks.

ampc's optimizers differ from PyTorch's inside step(): the math of a whole param group is one C call
per (device, dtype) (core/optim.h), which takes the device-side `grad_scale` / `found_inf` the
GradScaler sets, so a skipped step is decided on the device. Step counters are 0-dim float32
tensors on the parameter's device (PyTorch's fused/capturable layout), so they can be left
untouched by a skipped step without a host read.

`master_weights=True` (an ampc option) gives fp16/bf16 parameters an fp32 master copy in
state["master_param"]; the optimizer state is then fp32 and the parameter receives the rounded
master after every step. PyTorch refuses to unscale fp16 grads; this is the way to train fp16
parameters with a GradScaler anyway.
"""
import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

from .. import _C
from .._utils import _typename, _zero_grads
from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_LOW_PRECISION = (_C.float16, _C.bfloat16)


def _to_float(x):
    """A hyperparameter as a Python float; a Tensor hyperparameter costs one host read."""
    return float(x.item()) if isinstance(x, _C.Tensor) else float(x)


def _check_lr(lr):
    """The learning-rate checks Adam, Adagrad, Adadelta and RMSprop share, with PyTorch's messages
    (SGD tests `lr < 0.0` as PyTorch does, which lets NaN through, so it keeps its own)."""
    if isinstance(lr, _C.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_nonnegative(*named):
    """PyTorch's `if not 0.0 <= x: raise ValueError(f"Invalid x value: {x}")` checks, for
    ("label", value) pairs in the order given (the first bad one is the error raised)."""
    for label, value in named:
        if not 0.0 <= value:
            raise ValueError(f"Invalid {label} value: {value}")


def _check_adam_args(lr, betas, eps, weight_decay):
    """The checks NAdam, RAdam and Adamax share with Adam, PyTorch's messages in PyTorch's order."""
    _check_lr(lr)
    _check_nonnegative(("epsilon", eps))
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    _check_nonnegative(("weight_decay", weight_decay))


# State entries that are per-parameter 0-dim float32 scalars on the parameter's device (step
# counters, NAdam's mu_product, ASGD's eta and mu): loaded state is cast to that, never to the
# parameter's dtype.
_SCALAR_STATE_KEYS = frozenset({"step", "mu_product", "eta", "mu"})


def _check_not_differentiable(differentiable):
    if differentiable:
        raise NotImplementedError("ampc optimizers do not support differentiable=True")


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()

        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))

        self.state = defaultdict(dict)
        self.param_groups = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # ------------------------------------------------------------------ pickling and repr
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def _setdefault_groups(self, **defaults):
        """For subclasses' __setstate__: options added after a checkpoint was pickled get their
        defaults in every param group (each optimizer names its own)."""
        for group in self.param_groups:
            for key, value in defaults.items():
                group.setdefault(key, value)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ------------------------------------------------------------------ hooks
    def __init_subclass__(cls, **kwargs):
        """Wraps each subclass's step so the step hooks run around it, as PyTorch's profile_hook_step."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_ampc_hooked", False):
            return

        def hooked_step(self, *args, **kwargs):
            for pre_hook in list(self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(
                            f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
            out = step(self, *args, **kwargs)
            for post_hook in list(self._optimizer_step_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out

        functools.update_wrapper(hooked_step, step)  # keeps step's signature visible (GradScaler reads it)
        hooked_step._ampc_hooked = True
        cls.step = hooked_step

    @staticmethod
    def _add_hook(hooks, hook, prepend=False):
        """What every register_*_hook does: file `hook` under a fresh handle in its ordered dict,
        first instead of last with prepend=True."""
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook):
        return self._add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        return self._add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------------ state dict
    def _export_state(self, param, state):
        """The state of one parameter as state_dict() shows it: ampc's private bookkeeping (keys
        starting with "_") stays out, so the layout is PyTorch's. The tensors are the live state,
        not copies, as in PyTorch. State created by a step that the GradScaler may have skipped on
        the device is shown only once its counter says an update happened (one host read, here
        and not in step()): PyTorch would have no state for a parameter that never stepped."""
        if state.get("_unconfirmed"):
            counter = state.get(self._counter_key)
            if counter is not None and counter.item() == 0:
                return {}
            del state["_unconfirmed"]
        return {k: v for k, v in state.items() if not (isinstance(k, str) and k.startswith("_"))}

    def state_dict(self):
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)

        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {}
        for k, v in self.state.items():
            if isinstance(k, _C.Tensor):
                exported = self._export_state(k, v)
                if exported:
                    packed_state[param_mappings[id(k)]] = exported
            else:
                packed_state[k] = v
        state_dict = {"state": packed_state, "param_groups": param_groups}

        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hook_result = post_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    @staticmethod
    def _cast_state_value(param, key, value, group):
        """Where a loaded state tensor goes: step counters become 0-dim float32 tensors on the
        parameter's device (ampc keeps them there), master weights and the state of a
        master-weight group stay fp32, everything else takes the parameter's dtype and device
        (PyTorch's _process_value_according_to_param_policy)."""
        if key in _SCALAR_STATE_KEYS:
            if not isinstance(value, _C.Tensor):
                return _C.full((), float(value), dtype=_C.float32, device=param.device)
            return value.to(dtype=_C.float32, device=param.device).reshape(())
        if not isinstance(value, _C.Tensor):
            return value
        if param.is_floating_point():
            fp32_state = group.get("master_weights", False) and param.dtype in _LOW_PRECISION
            return value.to(dtype=_C.float32 if fp32_state else param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result

        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        group_of = {}
        for g in saved_groups:
            for pid in g["params"]:
                group_of[pid] = g

        def _cast(param, value, group, key=None):
            if isinstance(value, _C.Tensor) or key in _SCALAR_STATE_KEYS:
                return self._cast_state_value(param, key, value, group)
            if isinstance(value, dict):
                return {k: _cast(param, v, group, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(_cast(param, v, group) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, group_of[k])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        loaded = {id(q) for q in state}
        for group in self.param_groups:
            for p in group["params"]:
                if id(p) in loaded:
                    self._restore_state(p, self.state[p], group)

        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ------------------------------------------------------------------ grads and groups
    def zero_grad(self, set_to_none=True):
        _zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure=None):
        raise NotImplementedError

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        extracted_param_tensors = []
        extracted_param_names = []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                extracted_param_names.append(param[0])
                extracted_param_tensors.append(param[1])
            else:
                extracted_param_tensors.append(param)
        param_group["params"] = extracted_param_tensors
        if len(extracted_param_names) != 0:
            if len(extracted_param_names) == len(extracted_param_tensors):
                param_group["param_names"] = extracted_param_names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")

        for param in param_group["params"]:
            if not isinstance(param, _C.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)

        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current_group_txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current_group_txt} to the optimizer")
        if not param_set.isdisjoint({id(p) for p in param_group["params"]}):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ the fused step (ampc)
    # The state key of the device-side counter that tells whether a parameter was ever updated.
    _counter_key = "step"

    def _note_created(self, state):
        """Marks state created during this step: if the step may be skipped on the device, whether
        it was is only known there (see _export_state)."""
        state["_unconfirmed"] = True
        self._created_this_step.append(state)

    def _begin_step(self, closure):
        self._created_this_step = []
        return self._closure_loss(closure)

    def _end_step(self):
        """A step without found_inf cannot have been skipped: its new state is confirmed."""
        if getattr(self, "found_inf", None) is None:
            for state in self._created_this_step:
                state.pop("_unconfirmed", None)
        self._created_this_step = []

    def _uses_master(self, group, p):
        return bool(group.get("master_weights", False)) and p.dtype in _LOW_PRECISION

    @staticmethod
    def _zeros_state(p, master):
        """A zero state buffer for `p`: fp32 under master weights, else the parameter's dtype."""
        return _C.zeros_like(p, dtype=_C.float32) if master else _C.zeros_like(p)

    @staticmethod
    def _zero_step(p):
        return _C.zeros((), dtype=_C.float32, device=p.device)

    def _init_param_state(self, state, p, group, master):
        """Creates whatever state the parameter lacks for this step (subclasses; called every step,
        so a buffer an option needs later, such as amsgrad's, appears when the option is set)."""

    def _init_step_state(self, state, p, master, keys):
        """The first step of a parameter: a step counter at 0 (unconfirmed until a step is known to
        have happened, see _note_created) and a zero buffer for each of `keys`."""
        if "step" not in state:
            state["step"] = self._zero_step(p)
            self._note_created(state)
            for key in keys:
                state[key] = self._zeros_state(p, master)

    def _init_option_state(self, state, p, master, key, wanted):
        """A zero buffer under `key` once the option that needs it is on (amsgrad, momentum, ...)."""
        if wanted and key not in state:
            state[key] = self._zeros_state(p, master)

    def _restore_state(self, param, state, group):
        """Rebuilds ampc's bookkeeping after load_state_dict: a master-weight group whose loaded
        state has no master copy (a PyTorch state dict) starts from the parameter."""
        if self._uses_master(group, param) and "master_param" not in state:
            state["master_param"] = param.detach().to(dtype=_C.float32, copy=True)

    def _fused_lists(self, group, state_keys, step_key="step"):
        """The group's parameters that have a grad, split by (device, dtype, master weights) into
        the lists one C call takes: {key: {"params", "grads", "masters", "steps", *state_keys}}.
        Missing state is created first (_init_param_state). This loop is the Python cost of a step,
        so it avoids per-parameter method calls where it can."""
        lists = {}
        masters_on = bool(group.get("master_weights", False))
        all_state = self.state
        init = self._init_param_state
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            dtype = p.dtype
            master = masters_on and dtype in _LOW_PRECISION
            state = all_state[p]
            init(state, p, group, master)
            if master and "master_param" not in state:
                state["master_param"] = p.detach().to(dtype=_C.float32, copy=True)
            key = (p.device, dtype, master)
            entry = lists.get(key)
            if entry is None:
                entry = lists[key] = {"params": [], "grads": [], "masters": [] if master else None,
                                      "steps": [] if step_key else None, **{k: [] for k in state_keys}}
            entry["params"].append(p)
            entry["grads"].append(grad)
            if master:
                entry["masters"].append(state["master_param"])
            if step_key:
                entry["steps"].append(state[step_key])
            for k in state_keys:
                entry[k].append(state[k])
        return lists

    def _state_keys(self, group):
        """The state lists the group's fused C call takes, in _fused_lists' order (subclasses)."""
        return []

    def _step_key(self, group):
        """The state key of the counter the fused call advances (None: no counter)."""
        return "step"

    def _fused_update(self, group, lists, grad_scale, found_inf):
        """The one C call that updates one (device, dtype) list of the group (subclasses)."""
        raise NotImplementedError

    def _fused_step(self, closure):
        """What every ampc optimizer's step() does: the closure's loss, then per param group and
        per (device, dtype, master weights) list one _fused_update, with the GradScaler's
        grad_scale / found_inf on that device."""
        loss = self._begin_step(closure)
        amp_cache = {}
        for group in self.param_groups:
            lists = self._fused_lists(group, self._state_keys(group), step_key=self._step_key(group))
            for (device, _, _), t in lists.items():
                grad_scale, found_inf = self._amp_tensors(device, amp_cache)
                self._fused_update(group, t, grad_scale, found_inf)
        self._end_step()
        return loss

    def _closure_loss(self, closure):
        if closure is None:
            return None
        from ..autograd import enable_grad

        with enable_grad():
            return closure()

    def _amp_tensors(self, device, cache):
        """grad_scale and found_inf set by GradScaler.step, on `device` (copied there once per step,
        on the device: no host read)."""
        grad_scale = getattr(self, "grad_scale", None)
        found_inf = getattr(self, "found_inf", None)
        if device not in cache:
            cache[device] = tuple(None if t is None else t.to(device=device, non_blocking=True)
                                  for t in (grad_scale, found_inf))
        return cache[device]
