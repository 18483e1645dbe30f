"""parallel_apply: runs each replica on its own inputs, one thread per replica (ampc's kernels
release the GIL), re-raising the first failure, as torch.nn.parallel.parallel_apply."""
import threading

from ... import _C

__all__ = ["parallel_apply"]


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    if kwargs_tup is None:
        kwargs_tup = ({},) * len(modules)
    results = [None] * len(modules)
    grad_enabled = _C.is_grad_enabled()

    def worker(i, module, input, kwargs):
        from ...autograd import set_grad_enabled
        try:
            with set_grad_enabled(grad_enabled):
                if not isinstance(input, (list, tuple)):
                    input = (input,)
                results[i] = module(*input, **kwargs)
        except Exception as e:  # noqa: BLE001  (handed to the caller below)
            results[i] = e

    if len(modules) > 1:
        threads = [threading.Thread(target=worker, args=(i, m, x, k))
                   for i, (m, x, k) in enumerate(zip(modules, inputs, kwargs_tup))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        worker(0, modules[0], inputs[0], kwargs_tup[0])
    for r in results:
        if isinstance(r, Exception):
            raise r
    return results
