"""Tune the CPU library's operators on this machine: ``python -m nn.tune.host``.

For each operator family of ``nn.ops.host.OPS`` a few candidate knob settings around the
host model's choice are built (``nn.ops.cpu``'s own declarations and schedules, with the
knobs forced by ``nn.ops.host.use``), checked against numpy and timed on small workloads (the
median of several runs, on all threads); the fastest per family, by the geometric mean of
its workloads' times, goes into ``<cache>/host/records-<cpu>.json``, which the default
schedules then read before the shipped records. A progress bar (tqdm) runs while it works
and a table of the choices, with their speed-up over the model's, closes it.

    python -m nn.tune.host [--ops matmul reduce ...] [--reps 5] [--out PATH] [--dry-run]
    python -m nn.tune.host --derive zen3 ...      # write the model's record for a family
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

import te
from nn.ops import cpu, host
from nn.ops.cpu_conv import conv2d_nchw

try:
    import tqdm
except ImportError:                 # pragma: no cover - plain lines instead
    tqdm = None


# ----------------------------------------------------------------------------- workloads

def _conv_ref(x, w, groups=1):
    """A direct numpy convolution, stride 1, padding 1 (3x3)."""
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, f, h, wd), np.float64)
    fg = f // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + h, j:j + wd]
                out[:, g * fg:(g + 1) * fg] += np.einsum(
                    "nchw,fc->nfhw", patch, w[g * fg:(g + 1) * fg, :, i, j])
    return out.astype(np.float32)


def _workloads(op, rng, small):
    """[(label, build() -> callable, arrays, reference)] of operator family ``op``."""
    s = 2 if small else 1

    def arr(*shape):
        return rng.standard_normal(shape, dtype=np.float32)
    if op == "matmul":
        out = []
        for M, N, K in ((512 // s, 512 // s, 512 // s), (500 // s, 550 // s, 450 // s)):
            a, b = arr(M, K), arr(K, N)
            out.append((f"matmul {M}x{N}x{K}",
                        lambda a=a, b=b: cpu.build(cpu.matmul, [a.shape, b.shape]),
                        (a, b), a @ b))
        return out
    if op == "conv2d":          # the register-tiled convolution: few channels, depthwise
        x, w = arr(1, 3, 56 // s, 56 // s), arr(32, 3, 3, 3)
        xd, wd = arr(1, 32, 56 // s, 56 // s), arr(32, 1, 3, 3)
        return [("conv2d 3->32", lambda: cpu.build(conv2d_nchw, [x.shape, w.shape], padding=1),
                 (x, w), _conv_ref(x, w)),
                ("depthwise 32", lambda: cpu.build(conv2d_nchw, [xd.shape, wd.shape], padding=1,
                                                   groups=32), (xd, wd), _conv_ref(xd, wd, 32))]
    if op == "conv2d_packed":
        x, w = arr(1, 32, 28 // s, 28 // s), arr(64, 32, 3, 3)
        return [("conv2d 32->64", lambda: cpu.build(conv2d_nchw, [x.shape, w.shape], padding=1,
                                                    algorithm="direct"), (x, w),
                 _conv_ref(x, w))]
    if op == "winograd":
        x, w = arr(1, 64, 28 // s, 28 // s), arr(64, 64, 3, 3)
        return [("winograd 64->64", lambda: cpu.build(conv2d_nchw, [x.shape, w.shape],
                                                      padding=1, algorithm="winograd"),
                 (x, w), _conv_ref(x, w))]
    if op == "reduce":
        x = arr(1024 // s, 1024)
        e = np.exp(x - x.max(-1, keepdims=True))
        return [("row sum", lambda: cpu.build(cpu.sum, [x.shape], axis=-1), (x,), x.sum(-1)),
                ("softmax", lambda: cpu.build(cpu.softmax, [x.shape], axis=-1), (x,),
                 e / e.sum(-1, keepdims=True))]
    raise ValueError(f"nn.tune.host: unknown operator family {op!r}; known: {host.OPS}")


def candidates(op, model, h):
    """A few knob settings of ``op`` around the ``model``'s choice, all legal for host ``h``
    (the accumulators fit the register file with the operands they need)."""
    regs = h.vector_registers
    base = model[op]
    out = []
    if op == "matmul":
        for vectors in (1, 2):      # 3 vectors (48 columns) ran 10-40x slower on Zen 4
            for acc in (base["rows"] * base["vectors"] // 2, base["rows"] * base["vectors"],
                        regs - vectors - 2):
                rows = max(1, acc // vectors)
                if rows * vectors + vectors + 1 <= regs:
                    out.append({"rows": rows, "vectors": vectors, "l2_block": base["l2_block"]})
        out.append(dict(base, l2_block=1 - base["l2_block"]))
    elif op == "conv2d":
        out = [{"accumulators": a} for a in (8, 12, 16, 20) if a <= regs - 4]
    elif op == "conv2d_packed":
        out = [{"accumulators": a} for a in (8, 10, 14, 16) if a <= regs - 4]
    elif op == "winograd":
        out = [{"rows": r, "vectors": 2} for r in (4, 6, 8, 12) if 2 * r + 3 <= regs]
    elif op == "reduce":
        out = [{"partials": p} for p in (2, 4, 8)]
    model_choice = {k: v for k, v in base.items() if k != "l2_bytes"}
    keep = [model_choice]
    for c in out:
        c = {k: v for k, v in c.items() if k != "l2_bytes"}
        if c not in keep:
            keep.append(c)
    return keep


def _calls_per_sample(f, arrays, out, sample_s):
    for _ in range(3):                  # warm-up: the thread pool's first use costs ms
        f(*arrays, out=out)
    t0 = time.perf_counter()
    f(*arrays, out=out)
    once = max(time.perf_counter() - t0, 1e-7)
    return max(1, min(1000, int(sample_s / once)))


def prepare(op, knobs, h, work):
    """The built workloads of ``op`` with ``knobs`` forced on host ``h``, checked against
    numpy: [(f, arrays, out, calls per sample)]; AssertionError on a wrong result."""
    built = []
    with host.use(description=h, records={"knobs": {op: knobs}}):
        for label, make, arrays, want in work:
            f = make()
            out = f(*arrays)
            np.testing.assert_allclose(out, want, rtol=2e-3, atol=2e-3,
                                       err_msg=f"{label} with {op} knobs {knobs}")
            built.append((f, arrays, out, _calls_per_sample(f, arrays, out, 0.005)))
    return built


def _sample(built):
    """log seconds per call of each workload, once."""
    logs = []
    for f, arrays, out, n in built:
        t0 = time.perf_counter()
        for _ in range(n):
            f(*arrays, out=out)
        logs.append(math.log((time.perf_counter() - t0) / n))
    return logs


def tune(ops=host.OPS, reps=5, small=False, progress=True, seed=0):
    """{op: {"knobs", "seconds", "model_seconds", "tried"}} measured on this machine.

    Each family's candidates are built first, then timed in ``reps`` interleaved rounds
    (every candidate once per round), so that a shared machine's load moves all of them
    alike; a candidate's time is the geometric mean over its workloads of the medians."""
    h = host.detect()
    model = host.model_knobs(h)
    rng = np.random.default_rng(seed)
    plan = {op: candidates(op, model, h) for op in ops}
    works = {op: _workloads(op, rng, small) for op in ops}
    total = sum(len(c) for c in plan.values()) * (1 + reps)
    bar = tqdm.tqdm(total=total, desc="nn.tune.host", disable=not progress) \
        if tqdm is not None else None

    def tick(text):
        if bar is not None:
            bar.set_postfix_str(text, refresh=False)
            bar.update()
        elif progress:
            print(f"nn.tune.host: {text}", flush=True)
    results = {}
    for op in ops:
        built = []
        for c in plan[op]:
            built.append(prepare(op, c, h, works[op]))
            tick(f"{op}: built {c}")
        samples = [[] for _ in built]
        for r in range(reps):
            for k, b in enumerate(built):
                samples[k].append(_sample(b))
                tick(f"{op}: round {r + 1}/{reps}")
        times = [math.exp(float(np.mean(np.median(np.array(s), axis=0)))) for s in samples]
        best = int(np.argmin(times))
        results[op] = {"knobs": plan[op][best], "seconds": times[best],
                       "model_seconds": times[0],       # the first candidate is the model's
                       "tried": [{"knobs": c, "seconds": t} for c, t in zip(plan[op], times)]}
    if bar is not None:
        bar.close()
    return results


def record_of(results, h):
    """The user record (a dict for nn.ops.host) of tuning ``results`` on host ``h``."""
    return {"version": host.RECORDS_VERSION, "family": h.family, "cpu": h.cpu, "user": True,
            "derived": False, "host": h.to_json(),
            "knobs": {op: r["knobs"] for op, r in results.items()},
            "measured": {op: {"seconds": r["seconds"], "model_seconds": r["model_seconds"],
                              "tried": r["tried"]} for op, r in results.items()},
            "threads": te.get_num_threads() if hasattr(te, "get_num_threads") else None,
            "timestamp": time.time()}


def derived_record(family):
    """The record of ``family`` derived from the model of its nominal description."""
    h = host.FAMILIES[family]
    model = host.model_knobs(h)
    return {"version": host.RECORDS_VERSION, "family": family, "cpu": h.cpu, "derived": True,
            "note": "derived from nn.ops.host.model_knobs of the family's nominal description "
                    "(not measured on such a machine)",
            "host": h.to_json(),
            "knobs": {op: {k: v for k, v in model[op].items() if k != "l2_bytes"}
                      for op in host.OPS}}


def summary(results) -> str:
    lines = [f"{'operator':<14} {'chosen knobs':<46} {'ms':>8} {'model ms':>9} {'gain':>6}",
             "-" * 87]
    for op, r in results.items():
        knobs = ", ".join(f"{k}={v}" for k, v in r["knobs"].items())
        lines.append(f"{op:<14} {knobs:<46} {r['seconds'] * 1e3:>8.3f} "
                     f"{r['model_seconds'] * 1e3:>9.3f} {r['model_seconds'] / r['seconds']:>6.2f}")
    return "\n".join(lines)


def write_json(path, data):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m nn.tune.host",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--ops", nargs="+", default=list(host.OPS), choices=host.OPS)
    ap.add_argument("--reps", type=int, default=7, help="interleaved timing rounds")
    ap.add_argument("--threads", type=int, help="threads to tune for (default: te's)")
    ap.add_argument("--small", action="store_true", help="halved workloads (a quick pass)")
    ap.add_argument("--out", help="where to write the record (default: the user records)")
    ap.add_argument("--dry-run", action="store_true", help="print, write nothing")
    ap.add_argument("--derive", nargs="+", metavar="FAMILY", choices=sorted(host.FAMILIES),
                    help="write the model-derived records of these families to "
                         "nn/tune/records instead of tuning")
    args = ap.parse_args(argv)
    if args.derive:
        for family in args.derive:
            path = os.path.join(host.RECORDS_DIR, f"{family}.json")
            old = host.shipped_records(family)
            if old is not None and not old.get("derived"):
                print(f"{path} holds measured records; not replaced by derived ones",
                      file=sys.stderr)
                continue
            write_json(path, derived_record(family))
            print(f"wrote {path}")
        return 0
    h = host.detect()
    print(f"host: {h.cpu} (family {h.family}), ISA {', '.join(h.isa)}, {h.vector_bits}-bit "
          f"vectors x {h.vector_registers}, FMAs in flight {h.fma_in_flight}"
          f"{' (measured)' if h.measured else ''}, L1d {h.l1d >> 10} KiB, L2 {h.l2 >> 10} KiB, "
          f"L3 {h.l3 >> 20} MiB, {h.cores} cores")
    if args.threads:
        te.set_num_threads(args.threads)
    results = tune(args.ops, args.reps, args.small)
    print(summary(results))
    if args.dry_run:
        return 0
    old = host.user_records(h) if not args.out else None
    rec = record_of(results, h)
    if old:                                     # keep the families not tuned this time
        rec["knobs"] = dict(old["knobs"], **rec["knobs"])
    path = args.out or host.user_records_path(h)
    if path is None:
        print("the cache directory is off (TW_CACHE_DIR=''): pass --out PATH", file=sys.stderr)
        return 1
    write_json(path, rec)
    host.clear()
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
