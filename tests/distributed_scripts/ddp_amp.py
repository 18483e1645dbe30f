"""Run by tests/test_distributed.py under `python -m ampc.distributed.run --nproc-per-node 2`:
DistributedDataParallel against one process training on the whole batch, gradient accumulation
with no_sync, unused parameters, and a GradScaler that skips the same steps on every rank.
Prints "OK <rank>"."""
import copy

import os

import numpy as np

import ampc
import ampc.distributed as dist
import ampc.nn as nn
from ampc.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
r, w = dist.get_rank(), dist.get_world_size()


def model(seed):
    ampc.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.BatchNorm1d(16), nn.Linear(16, 3))


def same_on_all_ranks(tensors, what):
    for t in tensors:
        ref = t.detach().clone()
        dist.broadcast(ref, src=0)
        assert bool(ampc.equal(ref, t.detach())), f"{what} differs between ranks"


ampc.manual_seed(0)
X, Y = ampc.randn(16, 6), ampc.randn(16, 3)
shard = slice(r * 8, (r + 1) * 8)

# 1. rank 0's weights win; 3 SGD steps equal single-process full-batch training (tiny buckets:
#    several all-reduces per backward)
local = model(seed=10 + r)
single = copy.deepcopy(model(seed=10))  # what rank 0 starts from
ddp = DDP(local, bucket_cap_mb=0.0005, broadcast_buffers=False)
for p, q in zip(local.parameters(), single.parameters()):
    assert bool(ampc.equal(p, q)), "DDP did not broadcast rank 0's parameters"
opt = ampc.optim.SGD(ddp.parameters(), lr=0.1)
opt_single = ampc.optim.SGD(single.parameters(), lr=0.1)
single.train()
for step in range(3):
    opt.zero_grad()
    ((ddp(X[shard]) - Y[shard]) ** 2).mean().backward()
    opt.step()
    # the reference: each half's mean loss, averaged = the full batch's mean loss, but BatchNorm
    # normalises per shard, so the reference runs the two shards separately and averages grads
    opt_single.zero_grad()
    grads = []
    for k in range(w):
        single.zero_grad()
        ((single(X[k * 8:(k + 1) * 8]) - Y[k * 8:(k + 1) * 8]) ** 2).mean().backward()
        grads.append([p.grad.clone() for p in single.parameters()])
    for p, *gs in zip(single.parameters(), *grads):
        p.grad = sum(gs) / w
    opt_single.step()
same_on_all_ranks(local.parameters(), "parameters")
for p, q in zip(local.parameters(), single.parameters()):
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
assert set(ddp.state_dict()) == {"module." + k for k in local.state_dict()}

# 2. no_sync: two local backwards then one synchronised one average all three
net = model(seed=3)
d2 = DDP(net)
with d2.no_sync():
    d2(X[shard]).sum().backward()
    local_grad = net[0].weight.grad.clone()
d2(X[shard]).sum().backward()
total = net[0].weight.grad.clone()
mine = local_grad * 2  # the same data twice: the accumulated local grad
ref = mine.clone()
dist.all_reduce(ref, op=dist.ReduceOp.AVG)
np.testing.assert_allclose(total.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
same_on_all_ranks([total], "accumulated grads")


# 3. unused parameters: an error at the next forward without find_unused_parameters, fine with it
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 3), nn.Linear(6, 3)

    def forward(self, x, use_b=False):
        return self.b(x) if use_b else self.a(x)


ampc.manual_seed(5)
d3 = DDP(Branchy())
d3(X[shard]).sum().backward()
try:
    d3(X[shard])
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e)
else:
    raise AssertionError("an unfinished reduction went unnoticed")
ampc.manual_seed(5)
m4 = Branchy()
d4 = DDP(m4, find_unused_parameters=True)
for _ in range(2):
    m4.zero_grad()
    d4(X[shard]).sum().backward()
assert m4.b.weight.grad is None and m4.a.weight.grad is not None
same_on_all_ranks([m4.a.weight.grad], "grads with unused parameters")

# 4. GradScaler: an inf on rank 1 only makes both ranks skip the step and back off the scale
net = model(seed=7)
d5 = DDP(net)
opt = ampc.optim.Adam(d5.parameters(), lr=1e-2)
scaler = ampc.amp.GradScaler("cpu", init_scale=2.0 ** 10)
before = [p.detach().clone() for p in net.parameters()]
with ampc.autocast("cpu", dtype=ampc.float16):
    out = d5(X[shard])
    loss = ((out.float() - Y[shard]) ** 2).mean()
scaler.scale(loss).backward()
if r == 1:
    with ampc.no_grad():
        net[0].weight.grad[0, 0] = float("inf")
scaler.step(opt)
scaler.update()
assert scaler.get_scale() == 2.0 ** 9, scaler.get_scale()
for p, b in zip(net.parameters(), before):
    assert bool(ampc.equal(p.detach(), b)), "a rank stepped although another had an inf"
# the next, finite step runs on both
opt.zero_grad()
with ampc.autocast("cpu", dtype=ampc.float16):
    loss = ((d5(X[shard]).float() - Y[shard]) ** 2).mean()
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
assert scaler.stats()["skipped_steps"] == 1 and not bool(ampc.equal(net[0].weight.detach(), before[0]))
same_on_all_ranks(net.parameters(), "parameters after AMP steps")

dist.destroy_process_group()
# the ranks' stdout interleaves under mpirun: each rank also leaves a file the test looks for
if os.environ.get("AMPC_DIST_TEST_DIR"):
    with open(os.path.join(os.environ["AMPC_DIST_TEST_DIR"], f"ok.{r}"), "w") as fh:
        fh.write("OK")
print("OK", r, flush=True)
