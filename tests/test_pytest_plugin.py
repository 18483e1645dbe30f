"""ampc's pytest plugin (ampc.testing.pytest_plugin, issue 18), run on inline test files through
pytest's own pytester: the fixtures parametrise as documented, the seed fixture makes draws
repeatable, and amp_reference stores an FP32 reference once and then fails an AMP run that
deviates beyond its dtype's tolerances."""
import os

import pytest

import ampc

pytest_plugins = ["pytester"]

PLUGIN = ["-p", "ampc.testing.pytest_plugin", "-p", "no:cacheprovider"]


def run(pytester, src, *args):
    pytester.makepyfile(test_user=src)
    return pytester.runpytest_inprocess(*PLUGIN, *args)


def test_device_and_amp_dtype_parametrise(pytester):
    res = run(pytester, """
import ampc
def test_it(device, amp_dtype):
    x = ampc.ones(2, device=device)
    with ampc.autocast(device, dtype=amp_dtype):
        y = ampc.matmul(x[None], x[:, None])
    assert y.dtype == amp_dtype
""", "-v")
    n_dev = 2 if ampc.cuda.is_available() else 1
    res.assert_outcomes(passed=2 * n_dev)
    res.stdout.fnmatch_lines(["*test_it?cpu-float16?*PASSED*", "*test_it?cpu-bfloat16?*PASSED*"])


def test_seed_fixture_repeats_draws(pytester):
    res = run(pytester, """
import ampc, numpy as np
draws = []
def test_a(ampc_seed):
    draws.append((ampc.randn(3).tolist(), float(np.random.rand())))
def test_b(ampc_seed):
    draws.append((ampc.randn(3).tolist(), float(np.random.rand())))
    assert draws[0] == draws[1] and ampc_seed == 7
""", "--ampc-seed", "7")
    res.assert_outcomes(passed=2)


def test_amp_reference_stores_then_compares(pytester):
    src = """
import ampc, os
def model(x, amp, scale):
    w = ampc.linspace(-1, 1, 64).reshape(8, 8) * scale
    if amp:
        with ampc.autocast("cpu", dtype=ampc.float16):
            return (x @ w).float()
    return x @ w
def test_matmul(amp_reference):
    x = ampc.linspace(-2, 2, 32).reshape(4, 8)
    amp, scale = os.environ["AMP"] == "1", float(os.environ["SCALE"])
    amp_reference.check("out", model(x, amp, scale), dtype=ampc.float16 if amp else None)
"""
    os.environ.update(AMP="0", SCALE="1")
    try:
        res = run(pytester, src)
        res.assert_outcomes(passed=1)
        ref = pytester.path / "tests" / "amp_references" / "test_user" / "test_matmul" / "out.npy"
        assert ref.exists()
        os.environ["AMP"] = "1"  # fp16 run against the fp32 reference: within fp16 tolerances
        run(pytester, src).assert_outcomes(passed=1)
        os.environ["SCALE"] = "1.01"  # a real change (1%) fails, with the file named
        res = run(pytester, src)
        res.assert_outcomes(failed=1)
        res.stdout.fnmatch_lines(["*amp_reference 'out'*out.npy*tolerances of *float16*", "*Mismatched elements*"])
        run(pytester, src, "--ampc-update-references").assert_outcomes(passed=1)  # rewrite: passes again
        run(pytester, src).assert_outcomes(passed=1)
    finally:
        for k in ("AMP", "SCALE"):
            os.environ.pop(k, None)


def test_amp_reference_rejects_path_names(pytester):
    res = run(pytester, """
import pytest
def test_bad(amp_reference):
    with pytest.raises(ValueError, match="reference name"):
        amp_reference.check("../x", [1.0])
""")
    res.assert_outcomes(passed=1)


def test_entry_point_is_declared():
    text = open(os.path.join(os.path.dirname(__file__), "..", "pyproject.toml")).read()
    assert '[project.entry-points.pytest11]\nampc = "ampc.testing.pytest_plugin"' in text
