"""Run by tests/test_distributed.py under `python -m ampc.distributed.run --nproc-per-node 2`:
every collective of ampc.distributed against values computed here by hand; prints "OK <rank>"."""
import os
import sys

import numpy as np

import ampc
import ampc.distributed as dist

dist.init_process_group(backend=sys.argv[1] if len(sys.argv) > 1 else "mpi")
r, w = dist.get_rank(), dist.get_world_size()
assert (r, w) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])) and w == 2
assert os.environ["LOCAL_RANK"] == str(r) and os.environ["MASTER_ADDR"] and os.environ["MASTER_PORT"]
assert dist.is_initialized() and dist.get_backend() in ("mpi", "gloo")

# all_reduce: every op, several dtypes; 16-bit floats are reduced in fp32 and rounded once
vals = [np.array([1.5, -2.0, 3.25]), np.array([0.5, 4.0, -1.0])]
for op, ref in [(dist.ReduceOp.SUM, vals[0] + vals[1]), (dist.ReduceOp.AVG, (vals[0] + vals[1]) / 2),
                (dist.ReduceOp.MAX, np.maximum(*vals)), (dist.ReduceOp.MIN, np.minimum(*vals)),
                (dist.ReduceOp.PRODUCT, vals[0] * vals[1])]:
    for dt in (ampc.float32, ampc.float64, ampc.float16, ampc.bfloat16):
        t = ampc.tensor(vals[r]).to(dt)
        dist.all_reduce(t, op=op)
        assert t.dtype == dt
        np.testing.assert_allclose(t.double().numpy(), ref, rtol=1e-2 if dt in (ampc.float16, ampc.bfloat16) else 1e-6)
i = ampc.tensor([r + 1, 10 * (r + 1)])
dist.all_reduce(i)
assert i.tolist() == [3, 30] and i.dtype == ampc.int64
i = ampc.tensor([5 + r], dtype=ampc.int32)
dist.all_reduce(i, op=dist.ReduceOp.BAND)
assert i.tolist() == [5 & 6]

# async: a Work that completes
work = dist.all_reduce(ampc.ones(4), async_op=True)
assert work.wait() and work.is_completed()

# broadcast, reduce
b = ampc.full((2, 3), float(r))
dist.broadcast(b, src=1)
assert b.tolist() == [[1.0] * 3] * 2
t = ampc.tensor([float(r + 1)])
dist.reduce(t, dst=0)
assert r != 0 or t.tolist() == [3.0]

# all_gather, all_gather_into_tensor, gather, scatter
outs = [ampc.zeros(2, 2) for _ in range(w)]
dist.all_gather(outs, ampc.full((2, 2), r + 0.5))
assert [o[0, 0].item() for o in outs] == [0.5, 1.5]
flat = ampc.zeros(2 * 3)
dist.all_gather_into_tensor(flat, ampc.full((3,), float(r)))
assert flat.tolist() == [0.0] * 3 + [1.0] * 3
g = [ampc.zeros(1) for _ in range(w)] if r == 0 else None
dist.gather(ampc.tensor([r * 7.0]), g, dst=0)
assert r != 0 or [x.item() for x in g] == [0.0, 7.0]
s = ampc.zeros(2)
dist.scatter(s, [ampc.full((2,), 3.0), ampc.full((2,), 4.0)] if r == 1 else None, src=1)
assert s.tolist() == [3.0 + r] * 2

# reduce_scatter(_tensor): rank k gets the sum of everyone's k-th chunk
out = ampc.zeros(2)
dist.reduce_scatter_tensor(out, ampc.arange(4, dtype=ampc.float32) * (r + 1))
assert out.tolist() == ([0.0, 3.0] if r == 0 else [6.0, 9.0])
out = ampc.zeros(1)
dist.reduce_scatter(out, [ampc.tensor([1.0 + r]), ampc.tensor([10.0 + r])])
assert out.tolist() == ([3.0] if r == 0 else [21.0])

# objects
objs = [None, None]
dist.all_gather_object(objs, {"rank": r})
assert objs == [{"rank": 0}, {"rank": 1}]
lst = [r, "x"] if r == 0 else [None, None]
dist.broadcast_object_list(lst, src=0)
assert lst == [0, "x"]

# torch's errors
try:
    dist.all_reduce(ampc.ones(4, 4).t())
except ValueError as e:
    assert "Tensors must be contiguous" in str(e)
else:
    raise AssertionError("a non-contiguous tensor was accepted")
try:
    dist.broadcast(ampc.ones(1), src=5)
except ValueError as e:
    assert "Invalid source rank 5" in str(e)
else:
    raise AssertionError("an invalid rank was accepted")
try:
    dist.init_process_group("mpi")
except ValueError as e:
    assert "twice" in str(e)

dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
# the ranks' stdout interleaves under mpirun: each rank also leaves a file the test looks for
if os.environ.get("AMPC_DIST_TEST_DIR"):
    with open(os.path.join(os.environ["AMPC_DIST_TEST_DIR"], f"ok.{r}"), "w") as fh:
        fh.write("OK")
print("OK", r, flush=True)
