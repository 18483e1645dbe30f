"""The nn parity cases (tests/nn_parity) with ampc on the CUDA device against torch on the CPU: the
CUDA kernels of every module and functional op, in float32 and in one 16-bit dtype."""
import pytest

from nn_parity import all_cases
from nn_parity.runner import run

CASES = [c for c in all_cases() if c.cuda]


def _params():
    for c in CASES:
        for dt in ("float32",) + tuple(d for d in c.dtypes if d in ("float16", "bfloat16"))[:1]:
            yield pytest.param(c, dt, id=f"{c.id}-{dt}")


@pytest.mark.parametrize("case,dtype", list(_params()))
def test_parity_cuda(case, dtype, cuda):
    run(case, dtype, cuda)
