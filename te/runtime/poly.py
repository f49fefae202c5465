"""Integer polynomials over a function's size and scalar variables, as plain JSON data.

The bounds that lowering could not prove (preconditions), the sizes of in-kernel check sites
and shape expressions such as ``n + 1`` are polynomials (``schedule.access_bounds``). A built
function carries them in this form so that a library loaded without the compiler evaluates
them too. A polynomial is a list of terms ``[coefficient, [atom, ...]]``; an atom is

    ["var", k]                            variable k of the function (an index into its table)
    ["floordiv" | "floormod" | "min" | "max", P, Q]
    ["cast", dtype, P]                    P wrapped into an integer dtype
    ["castb", dtype, side, P, Q]          a bound of a cast of x in [P, Q]

``check`` validates such data (it may come from a file); ``source`` turns a checked polynomial
into a Python expression, built here from integers and the names above only, so evaluating it
runs no code from the file.
"""
from __future__ import annotations

from te import dtypes

BINARY = ("floordiv", "floormod", "min", "max")
MAX_DEPTH = 64


def _fdiv(a, b):
    return a // b if b else 0


def _fmod(a, b):
    return a % b if b else 0


def wrap(x, bits, signed):
    """``x`` wrapped into a ``bits``-wide integer (a narrowing cast)."""
    x &= (1 << bits) - 1
    return x - (1 << bits) if signed and x >= 1 << (bits - 1) else x


def clamp_bound(xlo, xhi, lo, hi, side):
    """A bound of ``cast(x)`` for ``x`` in [xlo, xhi]: that bound if the whole range fits
    [lo, hi], else the end of the dtype's range."""
    if lo <= xlo and xhi <= hi:
        return xhi if side > 0 else xlo
    return hi if side > 0 else lo


HELPERS = {"_fdiv": _fdiv, "_fmod": _fmod, "_wrap": wrap, "_clampb": clamp_bound,
           "min": min, "max": max}


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _known_int(d):
    return d in dtypes.SIGNED or d in dtypes.UNSIGNED


def check(p, nvars, where="polynomial", depth=0):
    """Raise ValueError unless ``p`` is a well-formed polynomial over ``nvars`` variables."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{where}: nested too deeply")
    if not isinstance(p, list):
        raise ValueError(f"{where}: expected a list of terms, got {type(p).__name__}")
    for term in p:
        if not (isinstance(term, list) and len(term) == 2 and _is_int(term[0])
                and isinstance(term[1], list)):
            raise ValueError(f"{where}: a term must be [coefficient, [atoms]], got {term!r:.80}")
        for a in term[1]:
            _check_atom(a, nvars, where, depth + 1)


def _check_atom(a, nvars, where, depth):
    if not (isinstance(a, list) and a and isinstance(a[0], str)):
        raise ValueError(f"{where}: bad atom {a!r:.80}")
    kind = a[0]
    if kind == "var" and len(a) == 2 and _is_int(a[1]) and 0 <= a[1] < nvars:
        return
    if kind in BINARY and len(a) == 3:
        check(a[1], nvars, where, depth)
        check(a[2], nvars, where, depth)
        return
    if kind == "cast" and len(a) == 3 and _known_int(a[1]):
        check(a[2], nvars, where, depth)
        return
    if kind == "castb" and len(a) == 5 and _known_int(a[1]) and _is_int(a[2]):
        check(a[3], nvars, where, depth)
        check(a[4], nvars, where, depth)
        return
    raise ValueError(f"{where}: bad atom {a!r:.80}")


def source(p, name) -> str:
    """Python source of checked polynomial ``p``; ``name(k)`` names variable k."""
    if not p:
        return "0"
    terms = []
    for coeff, atoms in p:
        factors = [_atom_source(a, name) for a in atoms]
        if coeff != 1 or not factors:
            factors.insert(0, str(int(coeff)))
        terms.append("*".join(factors))
    return "(" + " + ".join(terms) + ")"


def _atom_source(a, name):
    kind = a[0]
    if kind == "var":
        return name(a[1])
    if kind == "cast":
        return f"_wrap({source(a[2], name)}, {dtypes.bits(a[1])}, {dtypes.is_signed(a[1])})"
    if kind == "castb":
        lo, hi = dtypes.min_value(a[1]), dtypes.max_value(a[1])
        return f"_clampb({source(a[3], name)}, {source(a[4], name)}, {int(lo)}, {int(hi)}, " \
            f"{int(a[2])})"
    x, y = source(a[1], name), source(a[2], name)
    if kind == "floordiv":
        return f"_fdiv({x}, {y})"
    if kind == "floormod":
        return f"_fmod({x}, {y})"
    return f"{kind}({x}, {y})"


def evaluate(p, values):
    """The value of checked polynomial ``p`` for variable values ``values`` (a sequence)."""
    return eval(source(p, lambda k: repr(int(values[k]))), dict(HELPERS))


def variables(p):
    """The variable indices that ``p`` mentions."""
    out, stack = set(), [p]
    while stack:
        q = stack.pop()
        for _, atoms in q:
            for a in atoms:
                if a[0] == "var":
                    out.add(a[1])
                elif a[0] in BINARY:
                    stack += [a[1], a[2]]
                elif a[0] == "cast":
                    stack.append(a[2])
                elif a[0] == "castb":
                    stack += [a[3], a[4]]
    return out


def from_polynomial(p, index):
    """The JSON form of a ``schedule.access_bounds`` polynomial; ``index``: {Var: k}.
    KeyError for a variable not in ``index``, ValueError for an atom with no JSON form
    (a value read from memory, an opaque node)."""
    terms = []
    for monomial, coeff in sorted(p.items(), key=lambda mc: (len(mc[0]), repr(mc[0]))):
        terms.append([int(coeff), [_from_atom(a, index) for a in monomial]])
    return terms


def _from_atom(a, index):
    kind = a[0]
    if kind == "var":
        return ["var", index[a[1]]]
    if kind in BINARY:
        return [kind, from_polynomial(dict(a[1]), index), from_polynomial(dict(a[2]), index)]
    if kind == "cast":
        return ["cast", a[1], from_polynomial(dict(a[2]), index)]
    if kind == "castb":
        return ["castb", a[1], int(a[2]), from_polynomial(dict(a[3]), index),
                from_polynomial(dict(a[4]), index)]
    raise ValueError(f"an atom of kind {kind!r} has no serialized form")
