"""ampc.utils.checkpoint: activation checkpointing, torch.utils.checkpoint's API.

A checkpointed segment keeps only its inputs in forward and reruns itself during backward to get
the activations its gradients need, trading compute for memory. The rerun happens with the
forward's autocast state (device and CPU: enabled, dtype, cache) and, unless
preserve_rng_state=False, the forward's RNG states (CPU and every GPU an argument lives on), so
dropout draws the same mask and an AMP model trains with the same gradients as without
checkpointing.

Two variants, chosen by use_reentrant as in torch:
- reentrant (CheckpointFunction): forward under no_grad; backward reruns the segment and calls
  autograd.backward on it from inside the outer backward, so the segment's parameters get their
  .grad accumulated directly. Tensor arguments only, no keyword arguments.
- non-reentrant (torch's recommended one): forward runs with grad once to learn which leaves
  (parameters) the segment reaches, keeps none of its activations, and returns outputs whose node
  has edges to the tensor inputs AND those leaves; backward reruns the segment and returns the
  gradients through the engine. So autograd.grad(loss, params), inputs that do not require grad,
  keyword arguments and nested outputs work. (torch gets there with saved-tensor hooks; ampc's
  engine has none, and the graph walk gives the same gradients.)
"""
import contextlib
import warnings

from .. import _C

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "check_backward_validity",
           "detach_variable", "get_device_states", "set_device_states", "noop_context_fn",
           "set_checkpoint_early_stop", "DefaultDeviceType", "set_checkpoint_debug_enabled"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None


class CheckpointError(RuntimeError):
    pass


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Overrides checkpoint's `debug` flag for the block (None: use each call's own)."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Accepted for torch compatibility: ampc's recomputation always runs the whole segment."""
    yield


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


def detach_variable(inputs):
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not _is_tensor(inp):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if _is_tensor(inp)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


class DefaultDeviceType:
    """The device type whose RNG and autocast state checkpoint saves when no argument is on a
    non-CPU device ("cuda" when a GPU is present, else "cpu")."""

    _default_device_type = None

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        if not DefaultDeviceType._default_device_type:
            DefaultDeviceType._default_device_type = "cuda" if _C._cuda_is_available() else "cpu"
        return DefaultDeviceType._default_device_type


def _tree_tensors(obj, out):
    """Every tensor in a nested tuple/list/dict, in order."""
    if _is_tensor(obj):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            _tree_tensors(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _tree_tensors(x, out)
    return out


class _TensorSlot:
    """Where a tensor argument sat, in the copy of a segment's arguments its node keeps (the
    tensors themselves are saved tensors, which the engine frees after backward)."""


def _tree_replace(obj, it, is_leaf=_is_tensor):
    """obj with its leaves (tensors, or what is_leaf says) replaced, in order, by the items of
    iterator `it`."""
    if is_leaf(obj):
        return next(it)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_tree_replace(x, it, is_leaf) for x in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_tree_replace(x, it, is_leaf) for x in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _tree_replace(v, it, is_leaf)) for k, v in obj.items())
    return obj


def _is_slot(x):
    return isinstance(x, _TensorSlot)


def _infer_device_type(*args):
    device_types = [t.device.type for t in _tree_tensors(args, []) if t.device.type != "cpu"]
    types = set(device_types)
    if len(types) > 1:
        warnings.warn("Tensor arguments, excluding CPU tensors, are detected on at least two types of devices. "
                      "Device state will only be saved for devices of a single device type, and the remaining "
                      "devices will be ignored. Consequently, if any checkpointed functions involve randomness, "
                      "this may result in incorrect gradients. (Note that if CUDA devices are among the devices "
                      "detected, it will be prioritized; otherwise, the first device encountered will be selected.)"
                      f"\nDevice types: {sorted(types)} first device type: {device_types[0]}", stacklevel=2)
    if not device_types:
        return DefaultDeviceType.get_device_type()
    return "cuda" if "cuda" in types else device_types[0]


def get_device_states(*args):
    """(device indices, RNG states) of the GPUs the tensor arguments live on."""
    from .. import cuda
    ids = []
    for t in _tree_tensors(args, []):
        if t.device.type == "cuda":
            idx = t.device.index if t.device.index is not None else cuda.current_device()
            if idx not in ids:
                ids.append(idx)
    return ids, [cuda.get_rng_state(i) for i in ids]


def set_device_states(devices, states, *, device_type=None):
    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    if device_type != "cuda":
        return
    from .. import cuda
    for device, state in zip(devices, states):
        cuda.set_rng_state(state, device)


def _get_autocast_kwargs(device_type="cuda"):
    from ..amp import is_autocast_available
    device_kwargs = None
    if is_autocast_available(device_type):
        device_kwargs = {"enabled": _C.is_autocast_enabled(device_type), "dtype": _C.get_autocast_dtype(device_type),
                         "cache_enabled": _C.is_autocast_cache_enabled()}
    cpu_kwargs = {"enabled": _C.is_autocast_enabled("cpu"), "dtype": _C.get_autocast_dtype("cpu"),
                  "cache_enabled": _C.is_autocast_cache_enabled()}
    return device_kwargs, cpu_kwargs


class _ForwardState:
    """What the rerun must reproduce of the forward: autocast (device and CPU) and RNG states."""

    def __init__(self, preserve_rng_state, args):
        self.preserve_rng_state = preserve_rng_state
        self.device_type = _infer_device_type(*args)
        self.device_autocast_kwargs, self.cpu_autocast_kwargs = _get_autocast_kwargs(self.device_type)
        self.had_device_in_fwd = False
        if preserve_rng_state:
            self.fwd_cpu_state = _C.get_rng_state()
            if self.device_type == "cuda" and _C._cuda_is_available():
                self.had_device_in_fwd = True
                self.fwd_devices, self.fwd_device_states = get_device_states(*args)

    @contextlib.contextmanager
    def replay(self):
        """The block runs with the forward's RNG and autocast state, grad enabled; the caller's
        RNG state is restored afterwards."""
        from ..amp import autocast
        from ..autograd import enable_grad
        from ..random import fork_rng
        devices = self.fwd_devices if self.preserve_rng_state and self.had_device_in_fwd else []
        with fork_rng(devices=devices, enabled=self.preserve_rng_state, device_type=self.device_type):
            if self.preserve_rng_state:
                _C.set_rng_state(self.fwd_cpu_state)
                if self.had_device_in_fwd:
                    set_device_states(self.fwd_devices, self.fwd_device_states, device_type=self.device_type)
            device_ctx = autocast(device_type=self.device_type, **self.device_autocast_kwargs) \
                if self.device_autocast_kwargs is not None and self.device_type != "cpu" \
                else contextlib.nullcontext()
            with enable_grad(), device_ctx, autocast("cpu", **self.cpu_autocast_kwargs):
                yield


def _function_cls():
    from ..autograd import Function
    return Function


def _make_checkpoint_function():
    Function = _function_cls()

    class CheckpointFunction(Function):
        """The reentrant variant: forward under no_grad, backward reruns the segment and
        backpropagates through it from inside the outer backward."""

        @staticmethod
        def forward(ctx, run_function, preserve_rng_state, *args):
            check_backward_validity(args)
            ctx.run_function = run_function
            ctx.state = _ForwardState(preserve_rng_state, args)
            ctx.inputs = []
            ctx.tensor_indices = []
            tensor_inputs = []
            for i, arg in enumerate(args):
                if _is_tensor(arg):
                    tensor_inputs.append(arg)
                    ctx.tensor_indices.append(i)
                    ctx.inputs.append(None)
                else:
                    ctx.inputs.append(arg)
            ctx.save_for_backward(*tensor_inputs)
            return run_function(*args)  # Function.apply runs forward under no_grad

        @staticmethod
        def backward(ctx, *args):
            from .. import autograd
            inputs = list(ctx.inputs)
            for i, idx in enumerate(ctx.tensor_indices):
                inputs[idx] = ctx.saved_tensors[i]
            with ctx.state.replay():
                detached_inputs = detach_variable(tuple(inputs))
                outputs = ctx.run_function(*detached_inputs)
            if _is_tensor(outputs):
                outputs = (outputs,)
            outputs_with_grad, args_with_grad = [], []
            for i in range(len(outputs)):
                if _is_tensor(outputs[i]) and outputs[i].requires_grad:
                    outputs_with_grad.append(outputs[i])
                    args_with_grad.append(args[i])
            if not outputs_with_grad:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
            autograd.backward(outputs_with_grad, args_with_grad)
            grads = tuple(inp.grad if _is_tensor(inp) else None for inp in detached_inputs)
            return (None, None) + grads

    class _NonReentrantCheckpoint(Function):
        """The non-reentrant variant's node. apply(info, *tensor_inputs, *leaves): forward hands
        back the outputs the caller already computed (detached, so their activations are freed);
        backward reruns the segment and returns the gradients of the tensor inputs and leaves."""

        @staticmethod
        def forward(ctx, info, *tensors):
            ctx.info = info
            ctx.save_for_backward(*tensors)
            outputs = info.outputs
            info.outputs = None  # the node must not keep them (nor, through them, anything else)
            nondiff = [o for o, rg in zip(outputs, info.output_requires_grad) if not rg]
            if nondiff:
                ctx.mark_non_differentiable(*nondiff)
            return tuple(outputs)

        @staticmethod
        def backward(ctx, *grad_outputs):
            from .. import autograd
            info = ctx.info
            saved = ctx.saved_tensors
            n_in = info.n_tensor_inputs
            tensor_inputs, leaves = saved[:n_in], saved[n_in:]
            with info.state.replay(), info.recompute_ctx():
                detached = []
                for t in tensor_inputs:
                    d = t.detach()
                    d.requires_grad = t.requires_grad
                    detached.append(d)
                args, kwargs = _tree_replace((info.args, info.kwargs), iter(detached), _is_slot)
                outputs = _tree_tensors(info.function(*args, **kwargs), [])
            if len(outputs) != len(info.output_requires_grad):
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                      f"different metadata than during the forward pass: the forward returned "
                                      f"{len(info.output_requires_grad)} tensors, the recomputation {len(outputs)}.")
            outs, grads = [], []
            for o, g in zip(outputs, grad_outputs):
                if o.requires_grad and g is not None:
                    outs.append(o)
                    grads.append(g)
            wrt = [d for d in detached if d.requires_grad] + list(leaves)
            result = [None] * len(saved)
            if outs and wrt:
                got = autograd.grad(outs, wrt, grads, allow_unused=True)
                slots = [i for i, d in enumerate(detached) if d.requires_grad] + \
                    list(range(n_in, len(saved)))
                for i, g in zip(slots, got):
                    result[i] = g
            return (None,) + tuple(result)

    return CheckpointFunction, _NonReentrantCheckpoint


CheckpointFunction, _NonReentrantCheckpoint = _make_checkpoint_function()


class _RunInfo:
    """What a non-reentrant segment's node needs to rerun it."""
    __slots__ = ("function", "args", "kwargs", "state", "recompute_ctx", "n_tensor_inputs", "outputs",
                 "output_requires_grad")


def _leaves_reached(outputs, tensor_inputs):
    """The leaf tensors requiring grad that the graph of `outputs` reaches, in first-seen order,
    not looking past the nodes of the segment's own tensor inputs.

    Node wrappers are compared by identity, so every wrapper met stays referenced until the walk
    ends (`keep_alive`): a freed wrapper's id could be reused by the next one. AccumulateGrad
    wrappers are made afresh on each access, so leaves are told apart by their tensor."""
    input_ids = {id(t) for t in tensor_inputs}
    keep_alive = [t.grad_fn for t in tensor_inputs if t.grad_fn is not None]
    stop = {id(node) for node in keep_alive}
    leaves, seen_leaf = [], set()
    seen, stack = set(), [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        keep_alive.append(node)
        if id(node) in seen or id(node) in stop:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            if id(variable) not in input_ids and id(variable) not in seen_leaf:
                seen_leaf.add(id(variable))
                leaves.append(variable)
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return leaves


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, args, kwargs):
    from ..autograd import enable_grad
    forward_ctx, recompute_ctx = context_fn()
    if not _C.is_grad_enabled():
        with forward_ctx:
            return function(*args, **kwargs)
    tensor_inputs = _tree_tensors((args, kwargs), [])
    info = _RunInfo()
    info.state = _ForwardState(preserve_rng_state, tensor_inputs)
    with forward_ctx, enable_grad():
        ret = function(*args, **kwargs)
    outputs = _tree_tensors(ret, [])
    leaves = _leaves_reached(outputs, tensor_inputs)
    if not any(o.requires_grad for o in outputs):
        return ret
    info.function = function
    slot = _TensorSlot()
    info.args, info.kwargs = _tree_replace((args, kwargs), iter([slot] * len(tensor_inputs)))
    info.recompute_ctx = lambda: recompute_ctx
    info.n_tensor_inputs = len(tensor_inputs)
    info.output_requires_grad = [o.requires_grad for o in outputs]
    info.outputs = [o.detach() for o in outputs]
    new_outputs = _NonReentrantCheckpoint.apply(info, *tensor_inputs, *leaves)
    if _is_tensor(new_outputs):
        new_outputs = (new_outputs,)
    # the caller's structure around the new tensors; the forward's graph dies with `ret` here
    return _tree_replace(ret, iter(new_outputs))


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True, **kwargs):
    """Runs function(*args, **kwargs) without keeping its activations; backward reruns it."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                      "the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    return _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs `functions` (an nn.Sequential or a list) in `segments` chunks, checkpointing every
    chunk but the last."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                      "the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
