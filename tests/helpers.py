"""Test helpers shared by test_numpy.py and test_tensor.py: the dtype table that pairs each ampc
dtype with its NumPy and PyTorch twins, and random arrays of any of those dtypes. One copy keeps
the two files testing the same dtypes the same way."""
import ml_dtypes
import numpy as np
import torch

import ampc

# (ampc dtype, NumPy dtype, torch dtype)
DTYPES = [
    (ampc.float32, np.float32, torch.float32),
    (ampc.float16, np.float16, torch.float16),
    (ampc.bfloat16, ml_dtypes.bfloat16, torch.bfloat16),
    (ampc.float64, np.float64, torch.float64),
    (ampc.int64, np.int64, torch.int64),
    (ampc.int32, np.int32, torch.int32),
    (ampc.uint8, np.uint8, torch.uint8),
    (ampc.bool, np.bool_, torch.bool),
]


def random_array(rng, shape, np_dtype, int_high, scale):
    """Random values of np_dtype: booleans, integers in [0, int_high), or normals times scale."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np_dtype.kind in "iu":
        return rng.integers(0, int_high, size=shape).astype(np_dtype)
    return (rng.standard_normal(shape) * scale).astype(np_dtype)
