"""ampc's autocast policies against torch 2.13's lists, in both directions and on both device types
(issue 14). tests/autocast_lists_torch.py is the committed copy of torch's lists; the first test
holds that copy to the installed torch's dispatcher, so a torch upgrade that changes a list fails
here until the copy (and ampc) follow. ampc's CUDA policies are its op table's AUTOCAST column, its
CPU policies csrc/core/autocast_cpu.c."""
import os
import re
import sys

import pytest
import torch

import ampc
from ampc import _C

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import autocast_lists_torch as LISTS  # noqa: E402

TORCH = {"cuda": LISTS.table(LISTS.CUDA), "cpu": LISTS.table(LISTS.CPU)}
# ampc rows whose torch operator has another name
TORCH_NAME = {"cross_entropy": "cross_entropy_loss"}
# where ampc's row has a policy torch's list spells differently, with why the result is torch's
SAME_RESULT = {
    ("cuda", "cross_entropy"): "torch composes cross_entropy of log_softmax (fp32_set_opt_dtype) and nll_loss "
                               "(fp32): its loss is fp32 from fp32 math, as ampc's one fused fp32 row",
    ("cuda", "norm"): "fp32_append_dtype: torch reruns norm with dtype=float32, ampc casts the input to fp32; "
                      "both compute and return fp32",
}
# ops of torch's lists that ampc has no row for (composed of rows, or absent), and why that is fine
NO_ROW = {
    "_convolution", "convolution", "conv_tbc", "cudnn_convolution", "cudnn_convolution_transpose",
    "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "_scaled_dot_product_flash_attention",
}


def ampc_policies(device_type):
    return _C._autocast_policy_table(device_type)


def test_committed_lists_are_the_installed_torchs():
    names = torch._C._dispatch_get_all_op_names()
    for key, device_type in (("AutocastCUDA", "cuda"), ("AutocastCPU", "cpu")):
        registered = {n[len("aten::"):].split(".")[0] for n in names if n.startswith("aten::") and
                      re.search(key + r": registered at .*autocast_mode", torch._C._dispatch_dump(n))}
        assert registered == set(TORCH[device_type]), (
            f"{key}: torch registers {sorted(registered - set(TORCH[device_type]))} beyond the copy, the copy has "
            f"{sorted(set(TORCH[device_type]) - registered)} that torch does not")


@pytest.mark.parametrize("device_type", ["cuda", "cpu"])
def test_every_ampc_policy_is_torchs(device_type):
    """ampc -> torch: a row with a policy on this device type is on torch's list with that policy."""
    wrong = {}
    for name, policy in ampc_policies(device_type).items():
        if (device_type, name) in SAME_RESULT:
            continue
        theirs = TORCH[device_type].get(TORCH_NAME.get(name, name))
        if theirs != policy:
            wrong[name] = (policy, theirs)
    assert not wrong, f"{device_type}: ampc policy vs torch's (None: not on torch's list): {wrong}"


@pytest.mark.parametrize("device_type", ["cuda", "cpu"])
def test_every_torch_listed_op_ampc_has_carries_torchs_policy(device_type):
    """torch -> ampc: an op on torch's list that is a row of ampc's op table has torch's policy
    there (a row without one would run uncast)."""
    rows = {r["name"] for r in _C._op_table() if r["grad"] != "internal"}  # internal kernels: reached cast
    by_torch_name = {TORCH_NAME.get(n, n): n for n in rows}
    ours = ampc_policies(device_type)
    missing = {}
    for op, policy in TORCH[device_type].items():
        row = by_torch_name.get(op)
        if row is None or (device_type, row) in SAME_RESULT:
            continue
        if ours.get(row) != policy:
            missing[op] = (policy, ours.get(row))
    assert not missing, f"{device_type}: torch's policy vs ampc's row: {missing}"


# torch-listed ops that ampc offers without a row of their own (composed in Python or C of rows):
# the result dtype under autocast is checked against torch's on the CPU, from fp32 and bf16 inputs.
def _f(shape, M, dt):
    g = torch.Generator().manual_seed(0)
    t = torch.rand(shape, generator=g) + 0.5
    return (t if M is torch else ampc.tensor(t.numpy())).to(getattr(M, dt))


COMPOSED = {
    "kl_div": lambda M, a, b: M.nn.functional.kl_div(a.log(), b, reduction="batchmean"),
    "huber_loss": lambda M, a, b: M.nn.functional.huber_loss(a, b),
    "cosine_similarity": lambda M, a, b: M.nn.functional.cosine_similarity(a, b),
    "cosine_embedding_loss": lambda M, a, b: M.nn.functional.cosine_embedding_loss(a, b, M.ones(a.shape[0])),
    "margin_ranking_loss": lambda M, a, b: M.nn.functional.margin_ranking_loss(a[:, 0], b[:, 0], M.ones(a.shape[0])),
    "soft_margin_loss": lambda M, a, b: M.nn.functional.soft_margin_loss(a, b),
    "hinge_embedding_loss": lambda M, a, b: M.nn.functional.hinge_embedding_loss(a, b),
    "poisson_nll_loss": lambda M, a, b: M.nn.functional.poisson_nll_loss(a, b),
    "triplet_margin_loss": lambda M, a, b: M.nn.functional.triplet_margin_loss(a, b, a * 2),
    "multi_margin_loss": lambda M, a, b: M.nn.functional.multi_margin_loss(a, M.zeros(a.shape[0], dtype=M.int64)),
    "addbmm": lambda M, a, b: M.addbmm(a[:3, :3], a[:3, :3].expand(2, 3, 3), b[:3, :3].expand(2, 3, 3)),
    "addmv": lambda M, a, b: M.addmv(a[:, 0], a[:, :3], b[0, :3]),
    "addr": lambda M, a, b: M.addr(a[:3, :3], a[0, :3], b[0, :3]),
    "chain_matmul": lambda M, a, b: M.chain_matmul(a[:3, :3], b[:3, :3], a[:3, :3]),
    "tensordot": lambda M, a, b: M.tensordot(a, b.t(), dims=1),
    "cdist": lambda M, a, b: M.cdist(a, b),
    "dist": lambda M, a, b: M.dist(a, b),
    "addcmul": lambda M, a, b: M.addcmul(a, a, b),
    "addcdiv": lambda M, a, b: M.addcdiv(a, a, b),
    "trace": lambda M, a, b: M.trace(a),
    "cat": lambda M, a, b: M.cat([a, b.to(M.float32)]),
    "stack": lambda M, a, b: M.stack([a, b.to(M.float32)]),
    "prod": lambda M, a, b: M.prod(a),
}


# torch refuses mixed fp32 / bf16 operands in these before their inner matmuls run (which its CPU list
# would cast); ampc's inner matmuls are cast by autocast and succeed in bf16: more lenient, not wrong
LENIENT = {("chain_matmul", ("float32", "bfloat16")): "bfloat16", ("tensordot", ("float32", "bfloat16")): "bfloat16"}


@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("bfloat16", "bfloat16"), ("float32", "bfloat16")])
@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_ops_give_torchs_dtypes_on_cpu(name, dtypes):
    fn = COMPOSED[name]
    outs = []
    for M in (ampc, torch):
        a, b = _f((4, 3), M, dtypes[0]), _f((4, 3), M, dtypes[1])
        with M.autocast("cpu", dtype=M.bfloat16):
            try:
                out = fn(M, a, b)
            except (RuntimeError, TypeError, AttributeError) as e:
                out = type(e).__name__
        outs.append(out if isinstance(out, str) else str(out.dtype).split(".")[-1])
    if (name, dtypes) in LENIENT:
        assert outs[1] == "RuntimeError" and outs[0] == LENIENT[name, dtypes], outs
        return
    assert outs[0] == outs[1], f"{name} under CPU autocast: ampc {outs[0]}, torch {outs[1]}"
