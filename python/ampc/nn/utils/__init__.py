"""ampc.nn.utils: gradient clipping, parameter/vector conversion, weight and spectral norm (hook
and parametrization forms), parametrize, Conv/Linear-BatchNorm fusion, functional_call,
skip_init."""
from . import clip_grad, convert_parameters, fusion, init, parametrizations, parametrize, stateless  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,  # noqa: F401
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401
from .init import skip_init  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters"]
__all__ += ["clip_grads_with_norm_", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
            "fuse_linear_bn_weights", "skip_init", "spectral_norm", "remove_spectral_norm", "weight_norm",
            "remove_weight_norm"]
from . import rnn  # noqa: E402,F401  (issue 13: torch.nn.utils.rnn, packed sequences)
