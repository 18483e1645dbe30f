"""replicate: copies of a module on other devices whose parameters are differentiable copies of
the original's (gradients of a replica's forward reach the original parameters), as
torch.nn.parallel.replicate."""
import copy

from .scatter_gather import _device

__all__ = ["replicate"]


def replicate(network, devices, detach=False):
    devices = [_device(d) for d in devices]
    modules = list(network.modules())
    replicas = []
    for device in devices:
        clones = {}
        for m in modules:
            r = copy.copy(m)  # shallow: a new __dict__, the dicts below are made fresh
            r.__dict__ = m.__dict__.copy()
            r._parameters = {}
            r._buffers = {}
            r._modules = {}
            clones[id(m)] = r
        for m in modules:
            r = clones[id(m)]
            for k, p in m._parameters.items():
                if p is None:
                    r._parameters[k] = None
                else:
                    moved = p.detach().to(device) if detach else p.to(device)
                    if detach:
                        moved.requires_grad_(p.requires_grad)
                    r._parameters[k] = moved
            for k, b in m._buffers.items():
                r._buffers[k] = None if b is None else b.to(device)
            for k, c in m._modules.items():
                r._modules[k] = None if c is None else clones[id(c)]
        replicas.append(clones[id(network)])
    return replicas
