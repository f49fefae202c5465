"""The host CPU as the CPU schedules see it, and the knobs they take from it.

``host()`` describes this machine: LLVM's CPU name and features (the ones ``codegen_llvm``
compiles for), the ISA levels that matter here (AVX2, AVX-512, VNNI, AMX, BF16), the vector
width and register count, the cache sizes (sysfs), and the FMAs that must be in flight to keep
the FMA units busy (ports x latency: ``fma_in_flight``, from a microbenchmark run at first use
and cached on disk under ``te.runtime.get_cache_dir()/host``).

``knobs(op)`` gives the schedules' choices for one operator family ("matmul", "conv2d",
"conv2d_packed", "winograd", "reduce"), looked up in order:

    1. the user's records, written by ``python -m nn.tune.host`` (``<cache>/host/records-*.json``)
    2. the records shipped in ``nn/tune/records/<family>.json`` for the host's CPU family
       (TVM's TopHub idea; the ones not measured on such a machine say ``"derived": true``)
    3. ``model_knobs(description)``: a register-blocking model of the host

``use(family=...)`` forces a family's description and records (tests, cross-host checks);
``TW_HOST_FAMILY=zen4`` (say) does so for a whole process.
Compiled kernels are cached per ``token()``, so forcing another family builds anew.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace

RECORDS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "tune", "records")
RECORDS_VERSION = 1
FLAGS = ("l2_block",)    # knobs that may be 0
OPS = ("matmul", "conv2d", "conv2d_packed", "winograd", "reduce")


@dataclass(frozen=True)
class Host:
    """What the schedules know of a CPU."""

    cpu: str                    # LLVM's name: znver4, sapphirerapids, ...
    family: str                 # the records' family: zen4, sapphire_rapids, generic_avx2, ...
    isa: tuple = ()             # of avx2, fma, avx512, avx512vnni, avx512bf16, amx, ...
    vector_bits: int = 512
    vector_registers: int = 32
    fma_in_flight: float = 4.0  # vector FMAs in flight to fill the FMA units (ports x latency)
    l1d: int = 32 << 10         # bytes, per core
    l2: int = 1 << 20           # bytes, per core
    l3: int = 32 << 20          # bytes, shared
    cores: int = 1
    measured: bool = False      # fma_in_flight measured here (else nominal for the family)
    notes: dict = field(default_factory=dict, compare=False)

    def to_json(self):
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


# nominal descriptions of the families with shipped records (in-flight FMAs at full width:
# Zen 4 runs a 512-bit FMA as two 256-bit halves on its two FMA pipes, 1 per cycle x 4 cycles;
# Sapphire/Emerald Rapids has two 512-bit FMA ports x 4 cycles; Zen 3 and Haswell..Alder Lake
# have two 256-bit FMA ports x 4-5 cycles)
FAMILIES = {
    "zen3": Host("znver3", "zen3", ("avx2", "fma"), 256, 16, 8.0, 32 << 10, 512 << 10,
                 32 << 20),
    "zen4": Host("znver4", "zen4", ("avx2", "fma", "avx512", "avx512vnni", "avx512bf16"),
                 512, 32, 4.0, 32 << 10, 1 << 20, 32 << 20),
    "sapphire_rapids": Host("sapphirerapids", "sapphire_rapids",
                            ("avx2", "fma", "avx512", "avx512vnni", "avx512bf16", "amx"),
                            512, 32, 8.0, 48 << 10, 2 << 20, 60 << 20),
    "generic_avx2": Host("haswell", "generic_avx2", ("avx2", "fma"), 256, 16, 8.0, 32 << 10,
                         256 << 10, 8 << 20),
}

_CPU_FAMILY = {"znver3": "zen3", "znver4": "zen4", "sapphirerapids": "sapphire_rapids",
               "emeraldrapids": "sapphire_rapids", "graniterapids": "sapphire_rapids"}


def family_of(cpu, isa) -> str:
    """The records' family of LLVM CPU name ``cpu`` with features ``isa``."""
    if cpu in _CPU_FAMILY:
        return _CPU_FAMILY[cpu]
    if "amx" in isa:
        # only Sapphire Rapids and its successors have AMX; a VM's CPU model can make LLVM
        # name an older core (a Sapphire Rapids VM of model 167 reads as "rocketlake")
        return "sapphire_rapids"
    if "avx512" in isa:
        return "generic_avx512"
    if "avx2" in isa and "fma" in isa:
        return "generic_avx2"
    return "generic"


def _isa(features) -> tuple:
    have = set(features)
    out = [name for name in ("avx2", "fma") if name in have]
    if "avx512f" in have:
        out.append("avx512")
    out += [name for name in ("avx512vnni", "avx512bf16", "avxvnni") if name in have]
    if {"amx-tile", "amx-bf16"} & have or {"amxtile", "amxbf16"} & have:
        out.append("amx")
    return tuple(out)


def _cache_sizes():
    """(l1d, l2, l3) bytes from sysfs (cpu0), None where unknown."""
    sizes = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return None, None, None
    for entry in entries:
        if not entry.startswith("index"):
            continue
        try:
            with open(os.path.join(base, entry, "level")) as f:
                level = int(f.read())
            with open(os.path.join(base, entry, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip()
        except (OSError, ValueError):
            continue
        if kind == "Instruction":
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes[level] = int(digits) * scale
    return sizes.get(1), sizes.get(2), sizes.get(3)


# ----------------------------------------------------------------------------- microbenchmark

_FMA_IR = """
define float @fma_chains(i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
{phis}
{body}
  %i1 = add i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
{reduce}
  ret float %r
}}
declare <{w} x float> @llvm.fma.v{w}f32(<{w} x float>, <{w} x float>, <{w} x float>)
"""


def _fma_ir(chains, lanes):
    vec = f"<{lanes} x float>"
    init = "<" + ", ".join(["float 1.0"] * lanes) + ">"
    mul = "<" + ", ".join(["float 0.5"] * lanes) + ">"
    add = "<" + ", ".join(["float 0.25"] * lanes) + ">"
    phis = "\n".join(f"  %a{c} = phi {vec} [{init}, %entry], [%b{c}, %loop]"
                     for c in range(chains))
    body = "\n".join(f"  %b{c} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{c}, {vec} {mul}, "
                     f"{vec} {add})" for c in range(chains))
    red = [f"  %s0 = extractelement {vec} %b0, i32 0"]
    for c in range(1, chains):
        red.append(f"  %e{c} = extractelement {vec} %b{c}, i32 0")
        red.append(f"  %s{c} = fadd float %s{c - 1}, %e{c}")
    red.append(f"  %r = fadd float %s{chains - 1}, 0.0")
    return _FMA_IR.format(phis=phis, body=body, reduce="\n".join(red), w=lanes)


def measure_fma_in_flight(vector_bits, reps=5, iterations=1 << 20) -> float:
    """Vector FMAs in flight at full throughput (ports x latency), measured: the time per
    iteration of one dependent FMA chain (latency) over that of many independent chains
    (throughput), times the chains. Independent of the clock; the best of ``reps``."""
    from codegen_llvm import jit
    import llvmlite.binding as llvm
    jit._init()
    lanes = max(1, vector_bits // 32)
    wide = 24
    best = {}
    for chains in (1, wide):
        mod = llvm.parse_assembly(_fma_ir(chains, lanes))
        mod.verify()
        tm = jit.target_machine(jit.target_options())
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        fn = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64)(
            engine.get_function_address("fma_chains"))
        fn(1000)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(iterations)
            times.append(time.perf_counter() - t0)
        best[chains] = min(times)
        del fn, engine
    latency_per_iter = best[1]
    throughput_per_iter = best[wide] / wide
    return max(1.0, min(float(wide), latency_per_iter / throughput_per_iter))


def _measured_in_flight(cpu, vector_bits):
    """``measure_fma_in_flight`` cached on disk per CPU name and width (None: not measured)."""
    from te.runtime.cache_dir import get_cache_dir
    if os.environ.get("TW_HOST_MEASURE", "1") == "0":
        return None
    root = get_cache_dir()
    path = os.path.join(root, "host", f"fma-{cpu}-{vector_bits}.json") if root else None
    if path and os.path.exists(path):
        try:
            with open(path) as f:
                return float(json.load(f)["fma_in_flight"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    value = measure_fma_in_flight(vector_bits)
    if path:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump({"cpu": cpu, "vector_bits": vector_bits, "fma_in_flight": value}, f)
            os.replace(tmp, path)
        except OSError:
            pass
    return value


@functools.lru_cache(maxsize=None)
def detect() -> Host:
    """This machine's description (the FMA microbenchmark runs once, then comes from disk)."""
    from codegen_llvm import jit
    import llvmlite.binding as llvm
    jit._init()
    cpu = llvm.get_host_cpu_name()
    features = [k for k, on in llvm.get_host_cpu_features().items() if on]
    isa = _isa(features)
    family = family_of(cpu, isa)
    nominal = FAMILIES.get(family)
    bits = 512 if "avx512" in isa else 256 if "avx2" in isa or "avx" in isa else 128
    regs = 32 if "avx512" in isa else 16
    l1d, l2, l3 = _cache_sizes()
    default = nominal or FAMILIES["generic_avx2"]
    measured = _measured_in_flight(cpu, bits)
    in_flight = measured if measured is not None else default.fma_in_flight
    return Host(cpu, family, isa, bits, regs, round(in_flight, 2), l1d or default.l1d,
                l2 or default.l2, l3 or default.l3, os.cpu_count() or 1, measured is not None)


# ----------------------------------------------------------------------------- the model

def model_knobs(h: Host) -> dict:
    """The schedules' knobs for host ``h`` from a register-blocking model.

    A register tile of ``rows x vectors`` accumulators needs at least ``fma_in_flight``
    independent FMAs, and more to amortize its loads (each k step loads ``vectors`` panel
    vectors and broadcasts ``rows`` values): about 4x in flight, capped by the register file
    (accumulators + panel vectors + one broadcast + one spare). The convolutions, whose inner
    loops hold more live values (reused inputs across the kernel columns), take at most half
    the register file. Reductions keep as many vectors of partial sums as FMAs in flight.
    """
    regs, lanes = h.vector_registers, h.vector_bits // 32
    vectors = 2
    cap = regs - vectors - 2
    acc = int(max(2 * vectors, min(cap, round(4 * h.fma_in_flight))))
    rows = max(1, acc // vectors)
    conv_acc = int(min(acc, regs // 2))
    return {
        "vector_bits": h.vector_bits,
        # row tiles blocked to share B's packed panels in L2 where the FMA units outrun the
        # panels' stream from L3 (2 full-width FMAs per cycle); Zen 4 measured no gain
        "matmul": {"rows": rows, "vectors": vectors, "l2_bytes": h.l2,
                   "l2_block": int(h.fma_in_flight >= 6)},
        "conv2d": {"accumulators": conv_acc},
        "conv2d_packed": {"accumulators": max(4, conv_acc - 2)},
        "winograd": {"rows": max(2, conv_acc // vectors), "vectors": vectors},
        "reduce": {"partials": int(max(2, min(8, round(h.fma_in_flight))))},
        "lanes": lanes,
    }


# ----------------------------------------------------------------------------- records

def shipped_records(family):
    """The records shipped for ``family`` (a dict), or None."""
    path = os.path.join(RECORDS_DIR, f"{family}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        data = json.load(f)
    _check_record(data, path)
    return data


def user_records_path(h: Host):
    from te.runtime.cache_dir import get_cache_dir
    root = get_cache_dir()
    return os.path.join(root, "host", f"records-{h.cpu}.json") if root else None


def user_records(h: Host):
    """The records ``python -m nn.tune.host`` wrote for this CPU, or None."""
    path = user_records_path(h)
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            data = json.load(f)
        _check_record(data, path)
    except (OSError, ValueError) as exc:
        import warnings
        warnings.warn(f"nn.ops.host: ignoring the records in {path}: {exc}")
        return None
    return data


def _check_record(data, path):
    if not isinstance(data, dict) or not isinstance(data.get("knobs"), dict):
        raise ValueError(f"{path}: a host record is an object with a 'knobs' object")
    for op, values in data["knobs"].items():
        if op not in OPS or not isinstance(values, dict):
            raise ValueError(f"{path}: unknown operator {op!r} in 'knobs' (known: {OPS})")
        for name, v in values.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < (0 if name in FLAGS else 1):
                raise ValueError(f"{path}: knobs.{op}.{name} must be a "
                                 f"{'0 or 1' if name in FLAGS else 'positive integer'}, "
                                 f"got {v!r}")


_forced = []        # stack of (Host, records or None) from use()


def host() -> Host:
    """The description in force: a forced family's (``use``), else this machine's."""
    return _forced[-1][0] if _forced else detect()


@functools.lru_cache(maxsize=64)
def _resolved(h: Host, use_user: bool, family_records: str):
    model = model_knobs(h)
    layers = [json.loads(family_records)] if family_records else []
    if use_user:
        mine = user_records(h)
        if mine is not None:
            layers.append(mine)
    out = {op: dict(v) if isinstance(v, dict) else v for op, v in model.items()}
    sources = {op: "model" for op in OPS}
    for layer in layers:
        kind = "user" if layer.get("user") else (
            "derived" if layer.get("derived") else "shipped")
        for op, values in layer["knobs"].items():
            out[op].update(values)
            sources[op] = kind
    out["sources"] = sources
    return out


_default = []       # [(knobs, token)] of this machine, once resolved


def all_knobs() -> dict:
    """Every operator's knobs for the host in force, with ``sources`` (model, shipped,
    derived or user per operator)."""
    if _forced:
        return _forced[-1][2]
    if not _default:
        family = os.environ.get("TW_HOST_FAMILY")
        if family:                  # a family forced for the whole process
            if family not in FAMILIES:
                raise ValueError(f"TW_HOST_FAMILY={family!r}: unknown family; known: "
                                 f"{sorted(FAMILIES)}")
            h, rec, user = FAMILIES[family], shipped_records(family), False
        else:
            h = detect()
            rec, user = shipped_records(h.family), True
        k = _resolved(h, user, json.dumps(rec) if rec else "")
        _default.append((k, _token_of(k)))
    return _default[0][0]


def knobs(op) -> dict:
    """The knobs of operator family ``op`` (one of ``OPS``) for the host in force."""
    if op not in OPS:
        raise ValueError(f"nn.ops.host.knobs: unknown operator {op!r}; expected one of {OPS}")
    return all_knobs()[op]


def vector_bits() -> int:
    return all_knobs()["vector_bits"]


def _token_of(k):
    return tuple((op, tuple(sorted(k[op].items()))) for op in OPS) + (k["vector_bits"],)


def token() -> tuple:
    """A key that changes whenever the knobs would: part of the compiled-kernel cache key."""
    if _forced:
        return _forced[-1][3]
    if not _default:
        all_knobs()
    return _default[0][1]


@contextlib.contextmanager
def use(family=None, description=None, records=None):
    """Force a host: ``family``'s nominal description and shipped records (or ``description``
    and ``records``, a dict as in nn/tune/records), for the schedules built inside."""
    if family is not None:
        if family not in FAMILIES and shipped_records(family) is None:
            raise ValueError(f"nn.ops.host.use: unknown family {family!r}; known: "
                             f"{sorted(FAMILIES)}")
        description = description or FAMILIES.get(family) or replace(detect(), family=family)
        if records is None:
            records = shipped_records(family)
    if description is None:
        description = detect()
    k = _resolved(description, False, json.dumps(records) if records is not None else "")
    _forced.append((description, records, k, _token_of(k)))
    try:
        yield description
    finally:
        _forced.pop()


def clear():
    """Forget the resolved knobs (after new user records were written)."""
    _resolved.cache_clear()
    _default.clear()
