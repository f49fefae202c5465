"""Differential fuzzing of the compiler: random programs x random schedules, numpy =
reference interpreter = compiled CPU code, each case in a worker process, outputs and inputs
in guard-paged memory (see tests/fuzz/).

    python tools/fuzz.py --cases 2000 --seed 0 --workers 2 --save fuzz-failures/

prints the counts (cases, passed, refused with a clear error, mismatches, errors, crashes,
hangs) and writes each failing case's Python source to the --save directory (run one with
``python fuzz-failures/case_123.py`` from the repository root). Exit status 1 when a case
failed. ``--minutes`` stops drawing new cases after that much time.
"""
import argparse
import collections
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.fuzz.gen import generate                               # noqa: E402
from tests.fuzz.runner import KINDS, counts, run_cases, worker_env  # noqa: E402

FAILURES = ("mismatch", "error", "crash", "hang")


def failure_class(res) -> str:
    """A short key that groups failures of one cause (numbers and names blanked out)."""
    text = res["detail"].split("; stderr:")[0]
    text = re.sub(r"\b[A-Z]\d+\b", "T", text)
    text = re.sub(r"-?\d+(\.\d+)?", "N", text)
    return f"{res['kind']}: {text[:110]}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0, help="the first case's seed")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case (a hang)")
    ap.add_argument("--save", default="fuzz-failures", help="directory for failing cases")
    ap.add_argument("--minutes", type=float, default=None, help="stop after this long")
    ap.add_argument("--chunk", type=int, default=200, help="cases drawn per round")
    ap.add_argument("--gpu-every", type=int, default=20,
                    help="cases whose seed is a multiple of this also run through codegen_cuda "
                         "(numba's simulator without a GPU; 0: none)")
    args = ap.parse_args(argv)
    os.makedirs(args.save, exist_ok=True)
    env = worker_env(tempfile.mkdtemp(prefix="tw-fuzz-cache-"), gpu_every=args.gpu_every)
    t0 = time.time()
    results = []
    classes = collections.defaultdict(list)

    def record(case, res):
        if res["kind"] in FAILURES:
            path = os.path.join(args.save, f"case_{case.seed}.py")
            with open(path, "w") as f:
                f.write(case.source)
                f.write(f"\n# {res['kind']}: {res['detail']}\n")
            classes[failure_class(res)].append(case.seed)

    seed = args.seed
    while len(results) < args.cases:
        if args.minutes is not None and time.time() - t0 > args.minutes * 60:
            break
        n = min(args.chunk, args.cases - len(results))
        cases = [generate(s) for s in range(seed, seed + n)]
        seed += n
        results += run_cases(cases, workers=args.workers, timeout=args.timeout, env=env,
                             on_result=record)
        c = counts(results)
        print(f"[{time.time() - t0:7.1f} s] " + ", ".join(f"{k} {c[k]}" for k in
                                                          ("cases",) + KINDS), flush=True)
    c = counts(results)
    print(f"\nseeds {args.seed}..{seed - 1}: {c['cases']} cases, {c['pass']} passed, "
          f"{c['refused']} refused with a clear error, {c['mismatch']} mismatches, "
          f"{c['error']} errors, {c['crash']} crashes, {c['hang']} hangs "
          f"({time.time() - t0:.0f} s)")
    if classes:
        print(f"\nfailure classes (cases saved in {args.save}/):")
        for key, seeds in sorted(classes.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(seeds):5d}  {key}   e.g. seeds {seeds[:5]}")
    gpu = collections.Counter(
        ("ran" if "gpu ok" in r["detail"] else "not run" if "gpu not run" in r["detail"]
         else "refused") for r in results
        if r["kind"] == "pass" and "gpu " in (r["detail"] or ""))
    if gpu:
        print(f"\nGPU subset (codegen_cuda; every {args.gpu_every}th seed that passed on the "
              f"CPU): {gpu['ran']} ran and matched, {gpu['refused']} refused with a clear "
              f"error, {gpu['not run']} not bindable to blocks (failures are counted above)")
        notrun = collections.Counter(
            re.sub(r"-?\d+", "N", r["detail"].split("gpu not run: ", 1)[1])[:60]
            for r in results if r["kind"] == "pass" and "gpu not run" in (r["detail"] or ""))
        for key, n in notrun.most_common(4):
            print(f"  {n:5d}  not run: {key}")
    refusals = collections.Counter(failure_class(r).split(": ", 1)[1][:60] for r in results
                                   if r["kind"] == "refused")
    if refusals:
        print("\nmost common refusals:")
        for key, n in refusals.most_common(8):
            print(f"  {n:5d}  {key}")
    return 1 if any(c[k] for k in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
