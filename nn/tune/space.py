"""Configuration spaces: the knobs a schedule template defines and one chosen point among them.

A template receives ``cfg`` and calls ``cfg.define_split`` / ``define_reorder`` / ``define_knob``,
then reads ``cfg[name]``. Run with a ``ConfigSpace``, the calls record the knobs and ``cfg[name]``
is the knob's first choice, so the template still builds a schedule. Run with a ``ConfigEntity``,
the define calls change nothing and ``cfg[name]`` is the chosen value. An index in
``range(len(space))`` names one point in mixed radix, the first knob varying fastest.
``cfg.is_fallback`` is True only for the default point a template gets when no tuned config is
known (as in AutoTVM); a template may then set its own defaults, ``cfg[name] = SplitEntity(...)``.
Knob values and sizes are kept as JSON can store them: numpy numbers become Python numbers and
lists become tuples, so a config read back from a record is the one that was measured.
"""
from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass

from te.expr import IntImm

from .check import check_real, json_value, plain


class SplitEntity:
    """Loop extents after splitting one axis, outermost first; ``size[0]`` is -1 when unknown."""

    kind = "split"

    def __init__(self, size):
        self.size = tuple(int(f) for f in size)

    def apply(self, sch, op, axis):
        """Split ``axis`` of ``sch[op]`` by the inner sizes; returns the axes outermost first."""
        stage = sch[op]
        parts = []
        for factor in reversed(self.size[1:]):
            axis, inner = stage.split(axis, factor=factor)
            parts.append(inner)
        parts.append(axis)
        return parts[::-1]

    @property
    def value(self):
        return list(self.size)

    def __repr__(self):
        return f"split{list(self.size)}"


class ReorderEntity:
    """A permutation of a list of axes: ``perm[i]`` is the position taken to place ``i``."""

    kind = "reorder"

    def __init__(self, perm):
        self.perm = tuple(int(p) for p in perm)

    def apply(self, sch, op, axes):
        """Reorder ``axes`` of ``sch[op]`` by the permutation; returns the new order."""
        ordered = [axes[p] for p in self.perm]
        sch[op].reorder(*ordered)
        return ordered

    @property
    def value(self):
        return list(self.perm)

    def __repr__(self):
        return f"reorder{list(self.perm)}"


class ChoiceEntity:
    """One value of a plain knob; read it as ``.val``."""

    kind = "choice"

    def __init__(self, val):
        self.val = plain(val)

    @property
    def value(self):
        return self.val

    def __repr__(self):
        return repr(self.val)


_ENTITY_KINDS = {cls.kind: cls for cls in (SplitEntity, ReorderEntity, ChoiceEntity)}


@dataclass(frozen=True)
class Knob:
    """A named knob: its kind, its choices (entities) and a short description of where they came
    from."""

    name: str
    kind: str
    entities: tuple
    desc: str

    def __len__(self):
        return len(self.entities)


class ConfigSpace:
    """The knobs of one template applied to fixed arguments; ``len`` is the number of points."""

    is_fallback = False

    def __init__(self):
        self.knobs: dict[str, Knob] = {}
        self.flop = 0

    # -- definitions, called by templates ------------------------------------------------------
    def define_split(self, name, axis, num_outputs=2, policy="factors", candidate=None,
                     max_factor=None):
        """A knob over ways to split ``axis`` (an IterVar or an int extent) into loops.

        ``policy="factors"`` enumerates inner sizes that divide the extent; ``"power2"`` takes
        powers of two (a tail loop covers the rest). ``candidate`` lists size lists instead, as
        ``[[-1, 8], [-1, 16]]``; ``max_factor`` caps each inner size.
        """
        if num_outputs < 2:
            raise ValueError(f"define_split {name!r}: num_outputs must be >= 2")
        extent = _const_extent(axis)
        if candidate is not None:
            sizes = [self._checked_split(name, c, num_outputs, extent) for c in candidate]
            desc = f"candidate, {len(sizes)} given"
        else:
            if extent is None:
                raise ValueError(
                    f"define_split {name!r}: the extent of {_axis_name(axis)} is not a constant; "
                    f"pass the extent as an int or list the sizes with candidate=")
            sizes = _split_sizes(extent, num_outputs, policy, max_factor)
            desc = f"policy={policy}, extent={extent}, num_outputs={num_outputs}"
        if not sizes:
            raise ValueError(f"define_split {name!r}: no split sizes to choose from ({desc})")
        self._add(Knob(name, "split", tuple(SplitEntity(s) for s in sizes), desc))

    def define_reorder(self, name, axes, policy="all", candidate=None):
        """A knob over orders of ``axes``: all permutations, or the ``candidate`` ones.

        Each candidate lists positions into ``axes``: ``[0, 2, 1]`` swaps the last two.
        """
        n = len(axes)
        if candidate is not None:
            perms = [tuple(p) for p in candidate]
            for p in perms:
                if sorted(p) != list(range(n)):
                    raise ValueError(f"define_reorder {name!r}: {list(p)} is not a permutation "
                                     f"of the positions 0..{n - 1}")
            desc = f"candidate, {len(perms)} given"
        elif policy == "all":
            if n > 6:
                raise ValueError(f"define_reorder {name!r}: {n} axes have {math.factorial(n)} "
                                 "orders; list the ones worth trying with candidate=")
            perms = list(itertools.permutations(range(n)))
            desc = f"policy=all, {n} axes"
        else:
            raise ValueError(f"define_reorder {name!r}: unknown policy {policy!r}; use 'all' or "
                             "candidate=")
        self._add(Knob(name, "reorder", tuple(ReorderEntity(p) for p in perms), desc))

    def define_knob(self, name, values):
        """A plain knob over ``values``: numbers, strings, booleans, None, or tuples of them.

        Numpy scalars become Python numbers and lists become tuples, here and when a config is
        read back from a record, so the template sees the same value whether it is being
        measured or applied (a JSON record keeps no other types).
        """
        values = [json_value(f"define_knob {name!r}", "value", v) for v in values]
        if not values:
            raise ValueError(f"define_knob {name!r}: give at least one value")
        if len(set(map(_value_key, values))) != len(values):
            raise ValueError(f"define_knob {name!r}: values {values} repeat a value; give each "
                             "once")
        self._add(Knob(name, "choice", tuple(ChoiceEntity(v) for v in values),
                       f"values={values}"))

    def add_flop(self, flop):
        """Count ``flop`` floating-point operations per run (for GFLOP/s); without any call the
        operations of the template's compute are counted instead (``nn.tune.flop``)."""
        flop = check_real("cfg.add_flop", "flop", flop, what=" (operations per run)")
        self.flop += int(flop) if flop.is_integer() else flop

    def _add(self, knob):
        if knob.name in self.knobs:
            raise ValueError(f"knob {knob.name!r} is defined twice; give each knob its own name")
        self.knobs[knob.name] = knob

    @staticmethod
    def _checked_split(name, sizes, num_outputs, extent):
        sizes = [int(s) for s in sizes]
        if len(sizes) != num_outputs or any(s < 1 for s in sizes[1:]):
            raise ValueError(f"define_split {name!r}: candidate {sizes} should hold "
                             f"{num_outputs} sizes, the inner ones >= 1 (the outer may be -1)")
        if extent is not None and sizes[0] != -1:
            # as TVM's SplitEntity: the inner sizes decide, the outer is what they leave
            sizes[0] = -(-extent // math.prod(sizes[1:]))
        return sizes

    # -- reading, during the definition run ----------------------------------------------------
    def __getitem__(self, name):
        return self._knob(name).entities[0]

    def _knob(self, name):
        try:
            return self.knobs[name]
        except KeyError:
            raise KeyError(f"no knob {name!r}; defined: {list(self.knobs)}") from None

    # -- the points of the space ---------------------------------------------------------------
    def __len__(self):
        return math.prod(len(k) for k in self.knobs.values())

    def __iter__(self):
        return (self.get(i) for i in range(len(self)))

    def get(self, index):
        """The point at ``index``."""
        return self.from_knob_indices(self.knob_indices(index))

    def fallback(self):
        """The default point (index 0) with ``is_fallback`` set: what a template gets when no
        tuned config is known."""
        first = self.get(0)
        return ConfigEntity(first.index, first.entities, is_fallback=True)

    def knob_indices(self, index):
        """The choice of each knob at ``index``, in definition order."""
        if not 0 <= index < len(self):
            raise IndexError(f"config index {index} is out of range for a space of {len(self)}")
        digits = []
        for knob in self.knobs.values():
            index, digit = divmod(index, len(knob))
            digits.append(digit)
        return tuple(digits)

    def from_knob_indices(self, digits):
        """The point that takes choice ``digits[i]`` of knob ``i``."""
        index, stride = 0, 1
        entities = {}
        for digit, knob in zip(digits, self.knobs.values(), strict=True):
            entities[knob.name] = knob.entities[digit]
            index += digit * stride
            stride *= len(knob)
        return ConfigEntity(index, entities)

    def index_of(self, config):
        """The index of a point (from a record, say) by its values; ValueError if not here."""
        digits = []
        for knob in self.knobs.values():
            if knob.name not in config.entities:
                raise ValueError(f"config has no knob {knob.name!r}")
            if config[knob.name].kind != knob.kind:
                raise ValueError(f"{knob.name} is a {config[knob.name].kind} knob in the config, "
                                 f"a {knob.kind} knob in this space")
            value = config[knob.name].value
            for pos, entity in enumerate(knob.entities):
                if _value_key(entity.value) == _value_key(value):
                    digits.append(pos)
                    break
            else:
                raise ValueError(f"{knob.name}={value!r} is not a choice of this space")
        extra = set(config.entities) - set(self.knobs)
        if extra:
            raise ValueError(f"config has knobs {sorted(extra)} that this space does not define")
        return self.from_knob_indices(digits).index

    def __repr__(self):
        lines = [f"ConfigSpace(len={len(self)}, flop={self.flop}, knobs=["]
        for pos, knob in enumerate(self.knobs.values()):
            lines.append(f"  {pos:2d} {knob.name}: {knob.kind}({knob.desc}) len={len(knob)}")
        return "\n".join(lines) + "\n])"


class ConfigEntity:
    """One point of a space: the chosen value of each knob, and its index in the space."""

    def __init__(self, index, entities, is_fallback=False):
        self.index = index
        self.entities = dict(entities)
        self.is_fallback = is_fallback

    def define_split(self, name, *args, **kwargs):
        self._check(name)

    def define_reorder(self, name, *args, **kwargs):
        self._check(name)

    def define_knob(self, name, *args, **kwargs):
        self._check(name)

    def add_flop(self, flop):
        """Counted once, when the space is defined; nothing to do for a chosen point."""

    def _check(self, name):
        if name not in self.entities:
            raise KeyError(f"knob {name!r} is not in this config (knobs: {list(self.entities)});"
                           " did the template change since the config was recorded?")

    def __getitem__(self, name):
        self._check(name)
        return self.entities[name]

    def __setitem__(self, name, entity):
        """Override one knob of a fallback config (AutoTVM's ``FallbackConfigEntity``)."""
        if not self.is_fallback:
            raise TypeError(f"cfg[{name!r}] = ...: only a fallback config (cfg.is_fallback) can "
                            "be changed; a tuned config is what was measured")
        self._check(name)
        if type(entity) not in _ENTITY_KINDS.values():
            raise TypeError(f"cfg[{name!r}] = {entity!r}: give a SplitEntity, ReorderEntity or "
                            "ChoiceEntity")
        self.entities[name] = entity
        self.index = -1                 # no longer the space's first point

    def to_json(self):
        """A JSON-ready dict: ``{"index": 3, "knobs": {"tile_y": ["split", [-1, 8]], ...}}``."""
        return {"index": self.index,
                "knobs": {n: [e.kind, e.value] for n, e in self.entities.items()}}

    @classmethod
    def from_json(cls, data):
        """The inverse of ``to_json``."""
        if not isinstance(data, dict) or not isinstance(data.get("knobs"), dict):
            raise ValueError(f"config should be {{'index': ..., 'knobs': {{...}}}}, got {data!r}")
        entities = {}
        for name, knob in data["knobs"].items():
            if not isinstance(knob, (list, tuple)) or len(knob) != 2:
                raise ValueError(f"knob {name!r} should be [kind, value], got {knob!r}")
            kind, value = knob
            if kind not in _ENTITY_KINDS:
                raise ValueError(f"knob {name!r} has unknown kind {kind!r}")
            if kind != "choice" and not (isinstance(value, (list, tuple)) and all(
                    isinstance(v, int) and not isinstance(v, bool) for v in value)):
                raise ValueError(f"{kind} knob {name!r} should hold a list of integers, got "
                                 f"{value!r}")
            entities[name] = _ENTITY_KINDS[kind](value)
        index = data.get("index", -1)
        if not isinstance(index, int) or isinstance(index, bool):
            raise ValueError(f"config index should be an integer, got {index!r}")
        return cls(index, entities)

    def _key(self):
        return tuple((n, e.kind, _value_key(e.value)) for n, e in self.entities.items())

    def __eq__(self, other):
        return isinstance(other, ConfigEntity) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        knobs = ", ".join(f"{n}={e!r}" for n, e in self.entities.items())
        fallback = ", fallback" if self.is_fallback else ""
        return f"ConfigEntity(index={self.index}, {knobs}{fallback})"


def _value_key(value):
    """A key that tells knob values apart as a record does: 1, 1.0 and True differ."""
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_value_key(v) for v in value))
    return (type(value).__name__, repr(value))


def _const_extent(axis):
    if isinstance(axis, numbers.Integral) and not isinstance(axis, bool):
        return int(axis)
    extent = getattr(getattr(axis, "dom", None), "extent", None)
    return extent.value if isinstance(extent, IntImm) else None


def _axis_name(axis):
    return f"axis {axis.var.name}" if hasattr(axis, "var") else repr(axis)


def _split_sizes(extent, num_outputs, policy, max_factor):
    if policy == "factors":
        choices = [d for d in range(1, extent + 1) if extent % d == 0]
    elif policy == "power2":
        choices = [1 << p for p in range(extent.bit_length()) if 1 << p <= extent]
    else:
        raise ValueError(f"define_split: unknown policy {policy!r}; use 'factors' or 'power2'")
    if max_factor is not None:
        choices = [c for c in choices if c <= max_factor]
    sizes = []
    for inner in itertools.product(choices, repeat=num_outputs - 1):
        prod = math.prod(inner)
        if (extent % prod == 0) if policy == "factors" else prod <= extent:
            sizes.append([-(-extent // prod), *inner])
    return sizes
