"""scatter / gather: split a batch across devices along `dim` and bring the outputs back, as
torch.nn.parallel.scatter_gather. Moves go through Tensor.to, so gradients flow back through them."""
from ... import _C

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _device(d):
    if isinstance(d, _C.device):
        return d
    if isinstance(d, int):
        return _C.device("cuda", d) if d >= 0 else _C.device("cpu")
    return _C.device(d)


def scatter(inputs, target_gpus, dim=0):
    """Slices every tensor of `inputs` into len(target_gpus) chunks along dim, one per device;
    other objects are repeated. Returns a list with one entry per device used."""
    devices = [_device(d) for d in target_gpus]

    def scatter_map(obj):
        if isinstance(obj, _C.Tensor):
            chunks = obj.chunk(len(devices), dim) if len(devices) > 1 else (obj,)
            return [c.to(d) for c, d in zip(chunks, devices)]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]

    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None  # noqa: F841  (break the closure's reference cycle, as torch does)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """Concatenates the per-device outputs along dim on target_device (-1: the CPU)."""
    device = _device(target_device)

    def gather_map(outputs):
        out = outputs[0]
        if isinstance(out, _C.Tensor):
            return _C.cat([o.to(device) for o in outputs], dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outputs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outputs])) for k in out)
        if isinstance(out, tuple) and hasattr(out, "_fields"):
            return type(out)._make(map(gather_map, zip(*outputs)))
        return type(out)(map(gather_map, zip(*outputs)))

    try:
        return gather_map(outputs)
    finally:
        gather_map = None  # noqa: F841
