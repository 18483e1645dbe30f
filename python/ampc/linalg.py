"""ampc.linalg: the torch.linalg functions ampc implements."""
from ._C import vector_norm  # noqa: F401


def norm(input, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm for vectors (and flattened tensors when dim is None and ord is None)."""
    if ord is None:
        ord = 2
    if isinstance(ord, str):
        raise NotImplementedError(f"linalg.norm: matrix norm ord={ord!r} is not supported yet")
    return vector_norm(input, ord, dim, keepdim, dtype=dtype)
