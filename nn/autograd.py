"""Reverse-mode automatic differentiation, as PyTorch's autograd has it.

Every operation that runs on a tensor requiring grad records a node, the output's ``grad_fn``:
the context object of the operation's ``Function``, holding what its backward needs and one
edge (``next_functions``) per input, to the input's own node or, for a leaf, to the leaf's
``AccumulateGrad`` node. ``backward`` and ``grad`` sort the nodes reachable from the outputs
topologically (iteratively; roots in order, then inputs in order, so the order is
deterministic), run each node's backward once all its incoming gradients are summed, and free
the saved tensors unless ``retain_graph``. Backward functions are written in the same
differentiable operators as forward ones, so with ``create_graph=True`` gradients have graphs
of their own and can be differentiated again.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import warnings
import weakref

import numpy as np

from . import device as devices
from . import tensor as _tensor

__all__ = ["Function", "backward", "grad", "gradcheck", "GradcheckError", "no_grad",
           "enable_grad", "is_grad_enabled", "set_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "RemovableHandle"]

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
         "after they have already been freed). Saved intermediate values of the graph are freed "
         "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
         "backward through the graph a second time or if you need to access saved tensors after "
         "calling backward.")

# ----------------------------------------------------------------------------- grad mode

_mode = threading.local()


def is_grad_enabled() -> bool:
    """Whether operations record the graph in this thread."""
    return getattr(_mode, "enabled", True)


class _GradMode(contextlib.ContextDecorator):
    enabled = True

    def __init__(self):
        self._previous = []         # a stack: the same instance may decorate a recursive call

    def __enter__(self):
        self._previous.append(is_grad_enabled())
        _mode.enabled = self.enabled

    def __exit__(self, *exc):
        _mode.enabled = self._previous.pop()


class no_grad(_GradMode):
    """Context manager (or decorator) in which operations record no graph."""
    enabled = False


class enable_grad(_GradMode):
    """Context manager (or decorator) that turns recording back on inside ``no_grad``."""
    enabled = True


class set_grad_enabled(_GradMode):
    """Turn recording on or off: at once when called (``nn.set_grad_enabled(False)``), and
    back as it was at the end of a ``with`` block or of a decorated call, as PyTorch's."""

    def __init__(self, mode):
        super().__init__()
        self.enabled = bool(mode)
        self._initial = is_grad_enabled()
        _mode.enabled = self.enabled

    def __call__(self, fn):
        _mode.enabled = self._initial           # a decorator: no switch until it is called
        self._initial = None
        return super().__call__(fn)

    def __enter__(self):
        if self._initial is not None:           # the switch made in __init__ is this block's
            self._previous.append(self._initial)
            self._initial = None
            _mode.enabled = self.enabled
        else:
            super().__enter__()


class inference_mode(_GradMode):
    """``no_grad`` under PyTorch's other name: a context manager or decorator
    (``@nn.inference_mode()`` or ``@nn.inference_mode``); ``inference_mode(False)`` leaves
    the grad mode as it is."""

    def __new__(cls, mode=True):
        if callable(mode):                      # used bare as a decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        super().__init__()
        self.mode = bool(mode)

    def __enter__(self):
        self._previous.append(is_grad_enabled())
        if self.mode:
            _mode.enabled = False


def is_inference_mode_enabled() -> bool:
    """Whether recording is off (inference mode here is ``no_grad``)."""
    return not is_grad_enabled()


# ----------------------------------------------------------------------------- graph nodes

class RemovableHandle:
    """Returned by ``register_hook``: ``remove()`` takes the hook out again."""
    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self.id = next(self._ids)
        self._hooks = hooks

    def remove(self):
        self._hooks.pop(self.id, None)


class Node:
    """A node of the backward graph: gradients of its outputs in, of its inputs out."""
    next_functions: tuple = ()

    def __init__(self):
        self._hooks = {}            # output number -> hook dict of the (non-leaf) output tensor
        self._retained = {}         # output number -> weakref to an output that retains grad

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    def _output_hooks(self, nr):
        return self._hooks.get(nr)


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds the gradient that reaches it into ``variable.grad``."""

    def __init__(self, variable):
        super().__init__()
        self.variable = variable

    def _output_hooks(self, nr):
        return self.variable._backward_hooks


class BackwardNode(Node):
    """The node of one call of a ``Function``; its backward's ``ctx``."""
    _forward_cls = None

    def __init__(self):
        super().__init__()
        self.needs_input_grad = ()
        self._saved = ()
        self._versions = ()
        self._freed = False
        self._non_differentiable = set()
        self._outputs = ()          # (shape, dtype) of each differentiable output, else None
        self._input_meta = ()       # (shape, dtype) of each input that requires grad, else None

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` for backward; they are freed with the graph. An in-place write to
        one of them before backward makes backward fail (its old values are gone)."""
        self._saved = tensors
        self._versions = tuple(t._version if isinstance(t, _tensor.Tensor) else None
                               for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(FREED)
        for t, version in zip(self._saved, self._versions):
            if version is not None and t._version != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.dtype} tensor of shape {list(t.shape)}], which "
                    f"is used by {self.name()}, is at version {t._version}; expected version "
                    f"{version} instead. Hint: replace the in-place operation by its "
                    "out-of-place form (a = a + b), or clone() the tensor before writing to it.")
        return self._saved

    def mark_non_differentiable(self, *tensors):
        """Outputs among ``tensors`` get no gradient (such as the indices of ``max``)."""
        self._non_differentiable.update(id(t) for t in tensors)

    def apply(self, *grad_outputs):
        """Run the Function's backward on the gradients of the outputs."""
        return self._forward_cls.backward(self, *grad_outputs)

    def _release(self):
        if self._saved:
            self._saved = ()
            self._freed = True

    def _run(self, slots):
        """Backward on the summed gradients in ``slots``, checked against the inputs."""
        grad_outputs = []
        for nr, meta in enumerate(self._outputs):
            g = slots.get(nr)
            if g is None and meta is not None:      # an output that nothing used
                g = _tensor.zeros(meta[0], dtype=meta[1], device=meta[2])
            grad_outputs.append(g)
        grads = self.apply(*grad_outputs)
        grads = grads if isinstance(grads, tuple) else (grads,)
        if len(grads) != len(self.next_functions):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {len(self.next_functions)}, got "
                               f"{len(grads)})")
        checked = []
        for k, (g, meta) in enumerate(zip(grads, self._input_meta)):
            if g is None or meta is None:
                checked.append(None)
                continue
            if g.shape != meta[0]:
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at "
                                   f"index {k} - got {list(g.shape)} but expected shape "
                                   f"compatible with {list(meta[0])}")
            checked.append(g if g.dtype == meta[1] else g.to(meta[1]))
        return checked


class Function:
    """Base class of differentiable operations, as ``torch.autograd.Function``.

    Subclasses define ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as static
    methods and are called through ``apply``; ``backward`` returns one gradient (or None) per
    argument of ``forward``. Forward runs without recording; ``ctx`` is the graph node. As in
    PyTorch 2, ``forward(*args)`` may instead go without ``ctx`` when the subclass defines
    ``setup_context(ctx, inputs, output)``, which then fills ``ctx``.
    """
    node_suffix = "Backward"        # the node of Function ``Mul`` is named ``MulBackward``
    # True for operations whose forward is numpy view arithmetic on host storage (reshape,
    # slicing, permutes...): on GPU tensors it runs on a host copy and its results are copied
    # back to the GPU (copies, not views; see nn/device.py). What such a forward saves with
    # save_for_backward becomes the GPU tensors (``_save_real``); ctx attributes stay on the host
    host_only = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._node_cls = type(cls.__name__ + cls.node_suffix, (BackwardNode,),
                             {"_forward_cls": cls, "__module__": cls.__module__})

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("a Function subclass must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward(ctx, *grads)")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def _forward(cls, ctx, args):
        """``forward(ctx, *args)``, or ``forward(*args)`` then ``setup_context``."""
        if cls.setup_context is Function.setup_context:
            return cls.forward(ctx, *args)
        result = cls.forward(*args)
        cls.setup_context(ctx, args, result)
        return result

    @classmethod
    def from_te(cls, declare, name=None):
        """A differentiable function from a te declaration ``declare(*placeholders)``: its
        forward compiled, its backward derived by ``te.gradient`` (nn/functions/from_te.py)."""
        from .functions.from_te import from_te
        return from_te(declare, name)

    @classmethod
    def apply(cls, *args):
        """Run forward on ``args`` and, when an input requires grad, record the node."""
        Tensor = _tensor.Tensor
        ctx = cls._node_cls()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            if cls.host_only and any(isinstance(a, Tensor) and a.is_cuda for a in args):
                result = _forward_on_host(cls, ctx, args)
            else:
                result = cls._forward(ctx, args)
        outputs = result if isinstance(result, tuple) else (result,)
        inputs = {id(a) for a in args if isinstance(a, Tensor)}
        if not (is_grad_enabled() and any(ctx.needs_input_grad)):
            if is_grad_enabled():
                _mark_views([o for o in outputs if id(o) not in inputs], args)
            return result
        # an input returned as is becomes a new tensor on the same storage, as PyTorch's view
        outputs = tuple(Tensor(o._data) if id(o) in inputs else o for o in outputs)
        _mark_views(outputs, args)
        ctx.next_functions = tuple(_edge(a) if needs else (None, 0)
                                   for a, needs in zip(args, ctx.needs_input_grad))
        ctx._input_meta = tuple((a.shape, a.dtype) if needs else None
                                for a, needs in zip(args, ctx.needs_input_grad))
        meta = []
        for nr, out in enumerate(outputs):
            differentiable = (isinstance(out, Tensor) and out.is_floating_point()
                              and id(out) not in ctx._non_differentiable)
            meta.append((out.shape, out.dtype, out.device) if differentiable else None)
            if differentiable:
                out._set_history(ctx, nr)
        ctx._outputs = tuple(meta)
        return outputs if isinstance(result, tuple) else outputs[0]


def _mark_views(outputs, args):
    """A view of an input remembers its base (the tensor that in-place writes rebase)."""
    Tensor = _tensor.Tensor
    for out in outputs:
        if isinstance(out, Tensor) and out._view_of is not None:      # a GPU view
            parent = out._view_of[0]
            out._base = parent._base if parent._base is not None else parent
            out._base_epoch = out._base._epoch
        elif isinstance(out, Tensor) and isinstance(out._data, np.ndarray) and \
                out._data.base is not None:
            for a in args:
                if isinstance(a, Tensor) and np.may_share_memory(out._data, a._data):
                    out._base = a._base if a._base is not None else a
                    out._base_epoch = out._base._epoch
                    break


def _forward_on_host(cls, ctx, args):
    """``cls.forward`` on host copies of the GPU tensors among ``args``; results to the GPU.

    A GPU view reaches the forward as what it is on the host: a numpy view (its offset and
    strides) into a host copy of its root tensor, so that numpy decides view or copy as
    PyTorch does from the strides (``t().reshape(4)`` copies, ``t()[0]`` is a view). A result
    that is a numpy view of a root's host copy becomes a GPU view of that root: a copy that
    remembers where it lies in the root, so that writes to it reach the root and writes to
    the root reach it (``Tensor._view_of``)."""
    Tensor = _tensor.Tensor
    host, roots = [], []
    for a in args:
        if isinstance(a, Tensor) and a.is_cuda:
            array, root, root_host = _host_view(a)
            host.append(Tensor(array))
            roots.append((root, root_host))
        else:
            host.append(a)
    result = cls._forward(ctx, host)
    outputs = result if isinstance(result, tuple) else (result,)
    moved = tuple(Tensor(devices.move(o._data, devices.CUDA))
                  if isinstance(o, Tensor) else o for o in outputs)
    _save_real(ctx, zip(host, args), zip(outputs, moved))
    for o, m in zip(outputs, moved):
        if not isinstance(o, Tensor) or not isinstance(o._data, np.ndarray):
            continue
        for root, root_host in roots:
            if root_host.size and np.may_share_memory(o._data, root_host):
                offset = (o._data.__array_interface__["data"][0]
                          - root_host.__array_interface__["data"][0])
                m._view_of = (root, offset, o._data.strides)
                _tensor.register_gpu_view(m)
                break
    return moved if isinstance(result, tuple) else moved[0]


def _save_real(ctx, arguments, outputs):
    """What the host forward saved for backward, as it would be on the GPU: a host copy of an
    argument becomes that argument, a host output the output moved to the GPU, any other host
    tensor a GPU copy. Backward then runs on the device, and an in-place write to an argument
    or an output after forward is seen (the host copies have version counters of their own)."""
    if not ctx._saved:
        return
    Tensor = _tensor.Tensor
    real = {id(h): a for h, a in itertools.chain(arguments, outputs)
            if isinstance(h, Tensor)}

    def on_device(t):
        if not isinstance(t, Tensor):
            return t
        if id(t) in real:
            return real[id(t)]
        return Tensor(devices.move(t._data, devices.CUDA)) if not t.is_cuda else t

    ctx.save_for_backward(*(on_device(t) for t in ctx._saved))


def _host_view(t):
    """(``t`` on the host, its root tensor, the root's host copy): a GPU view as a numpy view
    into a contiguous host copy of the tensor it views; another GPU tensor as its own copy."""
    if t._view_of is None:
        copy = _c_order(devices.host(t._data))
        return copy, t, copy
    root, offset, strides = t._view_of
    root_host = _c_order(devices.host(root._data))
    return (np.ndarray(t.shape, t._data.dtype, buffer=root_host, offset=offset,
                       strides=strides), root, root_host)


def _c_order(array):
    """``array`` in C order, its shape kept (np.ascontiguousarray makes a 0-d array 1-d)."""
    return array if array.flags.c_contiguous else array.copy(order="C")


def _edge(t):
    """(node, output number) through which gradients reach tensor ``t``."""
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    node = t._accumulator() if t._accumulator is not None else None
    if node is None:            # one per leaf while a graph uses it, so hooks run once
        node = AccumulateGrad(t)
        t._accumulator = weakref.ref(node)
    return node, 0


# ----------------------------------------------------------------------------- the engine

def _topological_order(roots):
    """The nodes reachable from ``roots``, each before the nodes it sends gradients to."""
    order, seen = [], set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root.next_functions))]
        while stack:
            node, children = stack[-1]
            for child, _ in children:
                if child is not None and child not in seen:
                    seen.add(child)
                    stack.append((child, iter(child.next_functions)))
                    break
            else:
                stack.pop()
                order.append(node)
    order.reverse()
    return order


def _leading_to(order, targets):
    """The nodes of ``order`` from which a gradient can reach one of ``targets``."""
    needed = set()
    for node in reversed(order):
        if node in targets or any(c in needed for c, _ in node.next_functions):
            needed.add(node)
    return needed


def _accumulate(t, g, create_graph):
    """Add ``g`` into ``t.grad``; the first gradient gets a buffer of its own."""
    if t._grad is None:
        t._grad = g if create_graph else _tensor.Tensor(devices.copy(g._data))
    elif create_graph:
        t._grad = t._grad + g
    else:
        t._grad.add_(g)


def _accumulate_leaf(t, g, create_graph):
    """Add ``g`` into leaf ``t``'s ``.grad``, then run its post-accumulate-grad hooks (each
    called with ``t``, as PyTorch's ``register_post_accumulate_grad_hook``)."""
    _accumulate(t, g, create_graph)
    hooks = t._post_accumulate_hooks
    for hook in list(hooks.values()) if hooks else ():
        hook(t)


def _finish(node, nr, g, create_graph):
    """Run the tensor hooks of output ``nr`` on its summed gradient ``g``, retain it."""
    hooks = node._output_hooks(nr)
    for hook in list(hooks.values()) if hooks else ():
        replaced = hook(g)
        if replaced is not None:
            g = replaced
    ref = node._retained.get(nr)
    if ref is not None and ref() is not None:
        _accumulate(ref(), g, create_graph)
    return g


def _execute(outputs, grad_outputs, retain_graph, create_graph, inputs=None):
    """Propagate ``grad_outputs`` back from ``outputs``: into the leaves' ``.grad``, or,
    given ``inputs``, into a list of their gradients (leaving every ``.grad`` alone)."""
    roots = [_edge(t) for t in outputs]
    order = _topological_order([node for node, _ in roots])
    pending = {}                    # node -> {output number: summed gradient}

    def send(node, nr, g):
        slots = pending.setdefault(node, {})
        slots[nr] = g if nr not in slots else slots[nr] + g

    captures, needed, results = {}, None, None
    if inputs is not None:
        for k, t in enumerate(inputs):
            captures.setdefault(_edge(t), []).append(k)
        needed = _leading_to(order, {node for node, _ in captures})
        results = [None] * len(inputs)
    with set_grad_enabled(create_graph):
        for (node, nr), g in zip(roots, grad_outputs):
            send(node, nr, g)
        for node in order:
            if needed is not None and node not in needed:
                continue
            slots = pending.pop(node, None)
            if slots is None:
                continue
            for nr in sorted(slots):
                slots[nr] = _finish(node, nr, slots[nr], create_graph)
                for k in captures.get((node, nr), ()):
                    results[k] = slots[nr]
            if isinstance(node, AccumulateGrad):
                # a leaf that stopped requiring grad since the forward gets nothing, as in
                # PyTorch (``w.requires_grad_(False)`` between forward and backward)
                if inputs is None and node.variable.requires_grad:
                    _accumulate_leaf(node.variable, slots[0], create_graph)
                continue
            if needed is not None and not any(c in needed for c, _ in node.next_functions):
                continue
            grads = node._run(slots)
            for (child, nr), g in zip(node.next_functions, grads):
                if child is not None and g is not None:
                    send(child, nr, g)
            if not retain_graph:
                node._release()
    return results


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _make_grads(outputs, grad_outputs):
    """The seed gradient of each output: ones for a one-element output when not given."""
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grads)} tensors but there are "
                           f"{len(outputs)} outputs")
    seeds = []
    for k, (out, g) in enumerate(zip(outputs, grads)):
        if not out.requires_grad:
            raise RuntimeError(f"element {k} of tensors does not require grad and does not "
                               "have a grad_fn")
        if g is not None and not isinstance(g, _tensor.Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _tensor.ones_like(out, device=out.device)
        elif g.shape != out.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{k}] has a shape of "
                               f"{g.shape} and output[{k}] has a shape of {out.shape}.")
        seeds.append(g)
    return seeds


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves, or, given
    ``inputs``, into the ``.grad`` of those tensors only (leaves or not)."""
    outputs = _as_tuple(tensors)
    seeds = _make_grads(outputs, grad_tensors)
    retain = create_graph if retain_graph is None else retain_graph
    if inputs is None:
        _execute(outputs, seeds, retain, create_graph)
        return
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    for t, g in zip(inputs, _execute(outputs, seeds, retain, create_graph, inputs=inputs)):
        if g is not None:
            (_accumulate_leaf if t.is_leaf else _accumulate)(t, g, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """The gradients of ``outputs`` with respect to ``inputs``, as a tuple."""
    outputs, inputs = _as_tuple(outputs), _as_tuple(inputs)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    seeds = _make_grads(outputs, grad_outputs)
    results = _execute(outputs, seeds, create_graph if retain_graph is None else retain_graph,
                       create_graph, inputs=inputs)
    if not allow_unused and any(r is None for r in results):
        raise RuntimeError("One of the differentiated Tensors appears to not have been used in "
                           "the graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(results)


# ----------------------------------------------------------------------------- gradcheck

class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree."""


def _numerical_jacobian(fn, inputs, out_index, t, eps):
    """d outputs[out_index] / d t by central differences, shape (t.numel(), out.numel())."""
    flat = t._data.reshape(-1) if t._data.flags.c_contiguous else None
    if flat is None:
        raise ValueError("gradcheck: give contiguous inputs")
    columns = []
    for e in range(flat.size):      # fn may differentiate inside, so the graph is recorded
        saved = flat[e]
        flat[e] = saved + eps
        plus = _as_tuple(fn(*inputs))[out_index]._data.astype("float64")
        flat[e] = saved - eps
        minus = _as_tuple(fn(*inputs))[out_index]._data.astype("float64")
        flat[e] = saved
        columns.append(((plus - minus) / (2 * eps)).reshape(-1))
    return np.array(columns).reshape(flat.size, -1)


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True) -> bool:
    """Compare the gradients of ``fn(*inputs)`` with central finite differences."""
    inputs = _as_tuple(inputs)
    wrt = [t for t in inputs if isinstance(t, _tensor.Tensor) and t.requires_grad]
    for k, t in enumerate(wrt):
        if t.dtype != "float64":
            warnings.warn(f"Input #{k} requires gradient and is not a double precision "
                          "floating point; gradcheck will likely fail")
    outputs = _as_tuple(fn(*inputs))
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        analytical = [np.zeros((t.numel(), out.numel())) for t in wrt]
        for r in range(out.numel()):
            seed = _tensor.zeros_like(out)
            seed._data.reshape(-1)[r] = 1
            grads = grad(out, wrt, seed, retain_graph=True, allow_unused=True)
            for a, g in zip(analytical, grads):
                if g is not None:
                    a[:, r] = g._data.reshape(-1)
        for k, (t, a) in enumerate(zip(wrt, analytical)):
            n = _numerical_jacobian(fn, inputs, i, t, eps)
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {i} with respect to input "
                                     f"{k},\nnumerical:{n}\nanalytical:{a}\n")
    return True
