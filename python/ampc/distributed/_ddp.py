"""DistributedDataParallel: torch.nn.parallel.DistributedDataParallel on ampc.distributed.

At construction the parameters and buffers are broadcast from rank 0, so every rank starts from
the same model. The parameters are grouped into buckets of about `bucket_cap_mb` (in reverse
order of registration, the order backward usually produces their grads, as torch's reducer
does); a gradient hook on each parameter counts the grads that arrived, and when a bucket is
complete its grads are averaged over the ranks in one all-reduce of the flattened bucket. The
hook of the bucket's last parameter returns that parameter's averaged grad, the others are
written in place. With gradient accumulation (`no_sync()`), the accumulated grads are what the
next synchronised backward averages, as in torch.

Buffers are broadcast from rank 0 before each forward (broadcast_buffers=True). A backward that
leaves a bucket incomplete (a parameter that got no grad) fails at the next forward with torch's
error; find_unused_parameters=True walks the output's graph after forward and counts the
parameters it does not reach as ready (their grads are all-reduced as zeros and stay as they
were locally: None stays None)."""
import contextlib

from .. import nn
from . import ReduceOp, _pg, all_reduce, broadcast, get_world_size, is_initialized

__all__ = ["DistributedDataParallel"]


def _ampc():
    import ampc
    return ampc


class _Bucket:
    def __init__(self, params):
        self.params = params
        self.pending = set(range(len(params)))


class DistributedDataParallel(nn.Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False):
        super().__init__()
        if not is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.static_graph = static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._world = get_world_size()
        with _ampc().no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                broadcast(t, src=0)
        self._buckets = self._make_buckets(params)
        self._where = {}  # id(param) -> (bucket, index)
        for b in self._buckets:
            for i, p in enumerate(b.params):
                self._where[id(p)] = (b, i)
        self._hook_handles = [p.register_hook(self._make_hook(p)) for p in params]
        self._armed = False  # a synchronised backward is expected (set by forward)

    # ---------------------------------------------------------------- buckets and hooks
    def _make_buckets(self, params):
        buckets, cur, size = [], [], 0
        for p in reversed(params):
            nbytes = p.numel() * p.element_size()
            if cur and size + nbytes > self.bucket_bytes_cap:
                buckets.append(_Bucket(cur))
                cur, size = [], 0
            cur.append(p)
            size += nbytes
        if cur:
            buckets.append(_Bucket(cur))
        return buckets

    def _reset_buckets(self):
        for b in self._buckets:
            b.pending = set(range(len(b.params)))

    def _make_hook(self, p):
        def hook(grad):
            if not (self._armed and self.require_backward_grad_sync):
                return None
            bucket, i = self._where[id(p)]
            bucket.pending.discard(i)
            if bucket.pending:
                return None
            return self._reduce_bucket(bucket, last=p, last_grad=grad)
        return hook

    def _reduce_bucket(self, bucket, last=None, last_grad=None):
        """All-reduces the bucket's grads (average) and writes them back; returns the averaged
        incoming grad for `last`, whose accumulation happens after its hook."""
        a = _ampc()
        flats, shapes = [], []
        for p in bucket.params:
            if p is last:
                g = last_grad if p.grad is None else p.grad + last_grad
            else:
                g = p.grad if p.grad is not None else a.zeros_like(p)
            flats.append(g.detach().reshape(-1))
            shapes.append(g.shape)
        # one all-reduce per dtype present in the bucket
        by_dtype = {}
        for k, f in enumerate(flats):
            by_dtype.setdefault(f.dtype, []).append(k)
        reduced = [None] * len(flats)
        for dt, ks in by_dtype.items():
            flat = a.cat([flats[k] for k in ks]).contiguous()
            all_reduce(flat, op=ReduceOp.AVG)
            off = 0
            for k in ks:
                n = flats[k].numel()
                reduced[k] = flat[off:off + n].reshape(shapes[k])
                off += n
        out = None
        with a.no_grad():
            for p, r in zip(bucket.params, reduced):
                if p is last:
                    out = r - p.grad if p.grad is not None else r
                elif p.grad is not None:
                    p.grad.copy_(r)
        return out

    def _mark_unused(self, outputs):
        """find_unused_parameters: parameters the outputs' graph does not reach count as ready."""
        a = _ampc()
        reached, seen, stack = set(), set(), []
        for o in _tensors_in(outputs):
            if o.grad_fn is not None:
                stack.append(o.grad_fn)
            elif o.requires_grad:
                reached.add(id(o))
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            var = getattr(fn, "variable", None)
            if isinstance(var, a.Tensor):
                reached.add(id(var))
            for nxt, _ in getattr(fn, "next_functions", ()):
                stack.append(nxt)
        for b in self._buckets:
            for i, p in enumerate(b.params):
                if id(p) not in reached:
                    b.pending.discard(i)
        # a bucket made complete by unused parameters alone is reduced now (zeros where unused)
        for b in self._buckets:
            if not b.pending and all(id(p) not in reached for p in b.params):
                self._reduce_bucket(b)

    # ---------------------------------------------------------------- forward
    def forward(self, *inputs, **kwargs):
        if self._armed and any(b.pending for b in self._buckets) and self.require_backward_grad_sync:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss.")
        if self.broadcast_buffers and self._world > 1:
            with _ampc().no_grad():
                for buf in self.module.buffers():
                    broadcast(buf, src=0)
        self._reset_buckets()
        out = self.module(*inputs, **kwargs)
        self._armed = _ampc().is_grad_enabled() and self.require_backward_grad_sync
        if self._armed and self.find_unused_parameters:
            self._mark_unused(out)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Gradient accumulation without communication: grads stay local inside the block and are
        averaged by the first backward after it."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    @property
    def process_group(self):
        return _pg()

    def extra_repr(self):
        return ""


def _tensors_in(obj):
    a = _ampc()
    if isinstance(obj, a.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors_in(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors_in(x)
