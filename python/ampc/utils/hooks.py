"""ampc.utils.hooks: RemovableHandle, the one handle every register_*_hook returns
(nn.Module's forward/state_dict hooks, Optimizer's step hooks, Tensor.register_hook), as
torch.utils.hooks.RemovableHandle.

The handle holds weak references to the dicts its hook is filed in (under the handle's id), so a
forgotten handle never keeps a module or optimizer alive; remove() deletes the entry from each
dict still alive.
"""
import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """A handle which provides the capability to remove a hook.

    hooks_dict: the dict the hook is filed in under self.id. extra_dict: another dict, or a list
    of them, that also holds an entry under self.id (nn.Module's with_kwargs / always_call flags)
    and loses it on remove().
    """

    next_id = 0  # one counter for every handle, so ids never collide across dicts

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if extra_dict is None:
            extra_dict = ()
        elif not isinstance(extra_dict, (list, tuple)):
            extra_dict = (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    # Pickling keeps the dicts themselves (a weakref cannot be pickled), as torch's handle does;
    # unpickling moves the id counter past the restored id so new handles never reuse it.
    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        hooks_dict, self.id = state[0], state[1]
        self.hooks_dict_ref = weakref.ref(OrderedDict() if hooks_dict is None else hooks_dict)
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extra = state[2] if len(state) > 2 and state[2] is not None else ()
        self.extra_dict_ref = tuple(weakref.ref(OrderedDict() if d is None else d) for d in extra)

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()
