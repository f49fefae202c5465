"""DistributedDataParallel, as PyTorch's: each process holds a replica of the module and
trains on its own share of the data; after each backward the gradients are the average over
the processes of the group, so the optimizers take identical steps.

At construction the parameters and buffers of rank 0 are broadcast to every process, and
the parameters that require grad are assigned to buckets of about ``bucket_cap_mb`` (the
first bucket 1 MB, as PyTorch), in reverse registration order: roughly the order backward
produces gradients. A post-accumulate-grad hook on each parameter counts it ready; when a
bucket's parameters are all ready, its gradients are flattened into one buffer and a
nonblocking all-reduce (MPI ``Iallreduce``) starts at once, while backward goes on with
the earlier layers. Buckets start in index order on every rank (MPI needs the same order of
collectives everywhere). The hook that makes the last bucket ready waits for all of them and
writes the averages back into ``.grad``. ``no_sync()`` skips all of this (the gradients
accumulate locally and are averaged by the first backward outside it).
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import autograd
from .. import distributed as dist
from ..device import host, write
from ..distributed.process_group import resolve
from ..modules.module import Module
from ..tensor import Tensor

__all__ = ["DistributedDataParallel"]

FIRST_BUCKET_BYTES = 1024 * 1024

UNFINISHED = ("Expected to have finished reduction in the prior iteration before starting a "
              "new one. This error indicates that your module has parameters that were not "
              "used in producing loss. You can enable unused parameter detection by passing "
              "the keyword argument `find_unused_parameters=True` to "
              "`nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
              "function outputs participate in calculating loss. Parameters of the buckets not "
              "reduced: {names}")


class _Bucket:
    """Parameters whose gradients are all-reduced together, as one flat buffer."""

    def __init__(self, index, params):
        self.index = index
        self.params = params                    # list of (name, Parameter)
        self.sizes = [p.numel() for _, p in params]
        self.dtype = np.dtype(params[0][1].dtype)
        self.pending = len(params)
        self.buffer = None
        self.work = None

    def flatten(self, unused=()):
        """The bucket's gradients in one buffer (zeros for the parameters in ``unused``)."""
        self.buffer = np.empty(sum(self.sizes), self.dtype)
        offset = 0
        for (_, p), n in zip(self.params, self.sizes):
            g = None if id(p) in unused else p.grad
            self.buffer[offset:offset + n] = 0 if g is None else host(g._data).reshape(-1)
            offset += n
        return self.buffer


class DistributedDataParallel(Module):
    """Data-parallel training of ``module`` over the processes of ``process_group``
    (``device_ids``, ``output_device``, ``dim``, ``check_reduction``,
    ``gradient_as_bucket_view`` and ``static_graph`` are taken for PyTorch's signature and
    change nothing: one process drives one device, and gradients are copied to the buckets)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=25,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a nn.Module, got "
                            f"{type(module).__name__}")
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if not isinstance(bucket_cap_mb, (int, float)) or bucket_cap_mb <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be a positive "
                             f"number of megabytes, got {bucket_cap_mb!r}")
        self.module = module
        self.process_group = resolve(process_group, "DistributedDataParallel")
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)
        self.dim = dim
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self._sync_states([p for _, p in module.named_parameters()])
        self._sync_states([b for _, b in module.named_buffers()])
        self._buckets = self._assign_buckets(named)
        self._where = {}                        # id(param) -> bucket
        for bucket in self._buckets:
            for _, p in bucket.params:
                self._where[id(p)] = bucket
        self._armed = False
        self._reduced = False                   # this forward's gradients were averaged
        self._touched = False                   # a hook ran since the forward
        self._next = 0                          # the next bucket to start
        self._unused = set()
        self._grad_hooks = [p.register_post_accumulate_grad_hook(self._grad_ready)
                       for _, p in named]

    # ------------------------------------------------------------------ set-up

    def _root(self):
        return self.process_group.ranks[0]

    def _sync_states(self, tensors):
        """Broadcast ``tensors`` from the group's first rank, coalesced per dtype."""
        if self.process_group.size() == 1:
            return
        by_dtype = {}
        for t in tensors:
            if t is not None and t.numel():
                by_dtype.setdefault(np.dtype(t.dtype), []).append(t)
        for dtype, group in by_dtype.items():
            flat = Tensor(np.concatenate([host(t._data).reshape(-1) for t in group]))
            dist.broadcast(flat, src=self._root(), group=self.process_group)
            offset = 0
            with autograd.no_grad():
                for t in group:
                    n = t.numel()
                    write(t._data, flat._data[offset:offset + n].reshape(t.shape))
                    t._bump_version()
                    offset += n

    def _assign_buckets(self, named):
        """Buckets of parameters in reverse order, one dtype each, within the size caps."""
        buckets, current, size = [], [], 0
        cap = min(FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        for name, p in reversed(named):
            nbytes = p.numel() * np.dtype(p.dtype).itemsize
            if current and (size + nbytes > cap or np.dtype(p.dtype) != np.dtype(
                    current[0][1].dtype)):
                buckets.append(_Bucket(len(buckets), current))
                current, size, cap = [], 0, self.bucket_bytes_cap
            current.append((name, p))
            size += nbytes
        buckets.append(_Bucket(len(buckets), current))
        return buckets

    @property
    def bucket_names(self):
        """The parameter names of each bucket, in the order the buckets are reduced."""
        return [[name for name, _ in b.params] for b in self._buckets]

    # ------------------------------------------------------------------ forward

    def forward(self, *inputs, **kwargs):
        if self._armed and self._touched:
            waiting = [name for b in self._buckets[self._next:] for name, _ in b.params]
            raise RuntimeError(UNFINISHED.format(names=", ".join(waiting)))
        if self.broadcast_buffers and self.training and self.require_forward_param_sync:
            self._sync_states([b for _, b in self.module.named_buffers()])
        out = self.module(*inputs, **kwargs)
        self._reduced = False
        self._armed = autograd.is_grad_enabled() and self.require_backward_grad_sync
        if self._armed:
            self._prepare(out)
        return out

    def _prepare(self, out):
        """Reset the buckets for the backward of ``out``; with ``find_unused_parameters``,
        parameters that ``out`` does not depend on are ready at once."""
        self._next = 0
        self._used = None
        self._touched = False
        self._unused = set()
        for bucket in self._buckets:
            bucket.pending = len(bucket.params)
            bucket.buffer = bucket.work = None
        if not self.find_unused_parameters:
            return
        used = _parameters_reached(out)
        self._unused = {id(p) for b in self._buckets for _, p in b.params if id(p) not in used}
        self._used = np.array([id(p) in used for b in self._buckets for _, p in b.params],
                              np.int32)
        for bucket in self._buckets:
            bucket.pending = sum(id(p) in used for _, p in bucket.params)
        self._start_ready()

    # ------------------------------------------------------------------ backward

    def _grad_ready(self, param):
        """The post-accumulate-grad hook of every parameter."""
        if not self._armed:
            if self._reduced:
                raise RuntimeError(
                    "DistributedDataParallel: a second backward reached the parameters after "
                    "the gradients of this forward were already averaged (each forward under "
                    "DDP allows one backward; run the forward again, or accumulate locally "
                    "with no_sync())")
            return
        bucket = self._where[id(param)]
        if bucket.pending <= 0:
            raise RuntimeError("DistributedDataParallel: a parameter received a gradient twice "
                               "in one backward (reentrant backward or a parameter used in "
                               "two graphs); this is not supported")
        bucket.pending -= 1
        self._touched = True
        self._start_ready()

    def _start_ready(self):
        """Start the buckets that are ready, in index order; finish after the last one."""
        group = self.process_group
        for bucket in self._buckets[:self._next]:
            if bucket.work is not None:
                bucket.work.is_completed()      # lets MPI progress the started ones
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            bucket = self._buckets[self._next]
            bucket.work = dist.all_reduce(Tensor(bucket.flatten(self._unused)), dist.ReduceOp.SUM,
                                          group=group, async_op=True)
            self._next += 1
        if self._next == len(self._buckets):
            self._finish()

    def _finish(self):
        """Wait for every bucket and write the averaged gradients into ``.grad``."""
        used = None
        if self._used is not None:
            shared = Tensor(self._used)
            dist.all_reduce(shared, group=self.process_group)
            used = iter(shared._data.tolist())
        size = self.process_group.size()
        for bucket in self._buckets:
            bucket.work.wait()
            bucket.buffer /= size
            offset = 0
            for (_, p), n in zip(bucket.params, bucket.sizes):
                values = bucket.buffer[offset:offset + n].reshape(p.shape)
                offset += n
                if used is not None and not next(used):
                    continue                    # unused on every rank: .grad stays as it is
                if p.grad is None:
                    p.grad = Tensor(values.copy()).to(p.device)
                else:
                    write(p.grad._data, values)
                    p.grad._bump_version()
            bucket.buffer = bucket.work = None
        self._armed = False
        self._reduced = True

    @contextlib.contextmanager
    def no_sync(self):
        """Inside this block, backward accumulates gradients locally without communicating;
        the first backward after it averages the accumulated gradients."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def extra_repr(self):
        return f"world_size={self.process_group.size()}, buckets={len(self._buckets)}"


def _parameters_reached(out):
    """ids of the leaf tensors that a backward from the tensors in ``out`` reaches."""
    roots = [t.grad_fn for t in _tensors(out) if t.grad_fn is not None]
    found, seen, todo = set(), set(), list(roots)
    leaves = [t for t in _tensors(out) if t.grad_fn is None and t.requires_grad]
    found.update(id(t) for t in leaves)
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, autograd.AccumulateGrad):
            found.add(id(node.variable))
        todo.extend(child for child, _ in node.next_functions if child is not None)
    return found


def _tensors(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item)
