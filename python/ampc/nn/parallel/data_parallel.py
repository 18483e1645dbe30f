"""DataParallel: torch.nn.DataParallel's behaviour. Without a GPU (or with device_ids of one
device) it runs the wrapped module directly, as torch does; with several GPUs it scatters the
batch along `dim`, runs a replica per GPU and gathers the outputs on output_device. The wrapped
module is `self.module`, so state_dict keys read "module.<name>" as in torch."""
from ... import _C
from ..modules.module import Module
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import _device, gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _index(d):
    if isinstance(d, int):
        return d
    d = _C.device(d) if not isinstance(d, _C.device) else d
    return 0 if d.index is None else d.index


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        if not _C._cuda_is_available():
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(_C._cuda_device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.device_ids = [_index(x) for x in device_ids]
        self.output_device = _index(output_device)
        self.src_device_obj = _C.device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError("module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of them on device: "
                                   f"{t.device}")
        inputs, module_kwargs = scatter_kwargs(inputs, kwargs, self.device_ids, self.dim)
        if not inputs and not module_kwargs:
            inputs, module_kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **module_kwargs[0])
        replicas = replicate(self.module, self.device_ids[:len(inputs)], not _C.is_grad_enabled())
        outputs = parallel_apply(replicas, inputs, module_kwargs, self.device_ids[:len(replicas)])
        return gather(outputs, self.output_device, dim=self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional form: DataParallel's forward once, without keeping a wrapper."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if not _C._cuda_is_available():
        return module(*inputs, **(module_kwargs or {}))
    if device_ids is None:
        device_ids = list(range(_C._cuda_device_count()))
    device_ids = [_index(d) for d in device_ids]
    if output_device is None:
        output_device = device_ids[0]
    inputs, module_kwargs = scatter_kwargs(inputs, module_kwargs, device_ids, dim)
    if not inputs and not module_kwargs:
        inputs, module_kwargs = ((),), ({},)
    if len(device_ids) == 1:
        return module(*inputs[0], **module_kwargs[0])
    used = device_ids[:len(inputs)]
    replicas = replicate(module, used)
    outputs = parallel_apply(replicas, inputs, module_kwargs, used)
    return gather(outputs, _device(_index(output_device)), dim)
