"""ampc.nn.utils: gradient clipping and parameter/vector conversion."""
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters"]
from . import rnn  # noqa: E402,F401  (issue 13: torch.nn.utils.rnn, packed sequences)
