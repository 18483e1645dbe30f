"""InstanceNorm1d/2d/3d: each (sample, channel) normalised over its own spatial dims, as in PyTorch
(affine and running statistics off by default; F.instance_norm is batch_norm over (1, N * C, *))."""
import warnings

from .. import functional as F
from .batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):
        d = self._no_batch_dim
        if input.dim() not in (d, d + 1):
            raise ValueError(f"expected {d}D or {d + 1}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False")
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = local_metadata.get("version", None)
        # checkpoints from before version 2 hold running stats even without track_running_stats
        if version is None and not self.track_running_stats:
            running = [prefix + k for k in ("running_mean", "running_var") if prefix + k in state_dict]
            if running:
                error_msgs.append("Unexpected running stats buffer(s) {names} for {klass} with "
                                  "track_running_stats=False. If state_dict is a checkpoint saved before 0.4.0, this "
                                  "may be expected because {klass} does not track running stats by default since "
                                  "0.4.0. Please remove these keys from state_dict. If the running stats are actually "
                                  "needed, instead set track_running_stats=True in {klass} to enable them. See the "
                                  "documentation of {klass} for details.".format(
                                      names=" and ".join(f'"{k}"' for k in running), klass=type(self).__name__))
                for k in running:
                    state_dict.pop(k)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class InstanceNorm1d(_InstanceNorm):
    """Input (N, C, L) or (C, L)."""
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Input (N, C, H, W) or (C, H, W)."""
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Input (N, C, D, H, W) or (C, D, H, W)."""
    _no_batch_dim = 4
