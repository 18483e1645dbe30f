"""DistributedDataParallel: the name torch scripts import. It needs a default process group
(torch.distributed.init_process_group), which ampc does not have yet: ampc.distributed is issue 17
(data-parallel training across processes). Building one raises torch's message for a missing
process group, naming that, instead of training silently on one process."""
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


def _process_group_ready():
    try:
        from ... import distributed
    except ImportError:
        return False
    return bool(getattr(distributed, "is_available", lambda: False)()) and \
        bool(getattr(distributed, "is_initialized", lambda: False)())


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None, mixed_precision=None,
                 device_mesh=None, skip_all_reduce_unused_params=False):
        super().__init__()
        if process_group is None and not _process_group_ready():
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group. (ampc: DistributedDataParallel needs ampc.distributed's process "
                             "groups, issue 17, which this build does not have; on one process use the module "
                             "itself or nn.DataParallel)")
        raise NotImplementedError("ampc: DistributedDataParallel's gradient all-reduce is issue 17 "
                                  "(ampc.distributed); this build has no collective backend")
