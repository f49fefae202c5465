"""A fuzz worker: runs the cases it reads from stdin, one JSON line each, and writes one JSON
verdict line per case to the results pipe (the stdout it was started with; the case's own
output, Python's and native code's, goes to stderr). A crash or hang of a case kills only this
process; the runner (runner.py) attributes it to the case and starts another worker."""
import json
import os
import sys
import time
import traceback


def _verdict(source, seed, gpu=False):
    import te
    from tests.fuzz import harness
    ns = {"__name__": "fuzzcase"}
    try:
        exec(compile(source, f"<fuzz case {seed}>", "exec"), ns)
    except (te.ScheduleError, te.TEError) as err:
        return "refused", "program: " + harness._describe(err)
    except Exception as err:
        where = traceback.extract_tb(err.__traceback__)[-1]
        return "error", (f"program: {harness._describe(err)} "
                         f"(at {os.path.basename(where.filename)}:{where.lineno})")
    try:
        harness.run_case(ns, source, gpu=gpu)
    except harness.Outcome as out:
        return out.kind, out.detail
    except Exception as err:
        where = traceback.extract_tb(err.__traceback__)[-1]
        return "error", (f"harness: {harness._describe(err)} "
                         f"(at {os.path.basename(where.filename)}:{where.lineno})")
    return "error", "run_case returned without a verdict"


def main():
    results = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                       # anything printed goes to stderr, not the results
    sys.stdout = sys.stderr
    every = int(os.environ.get("TW_FUZZ_GPU_EVERY", "0") or 0)
    if every:
        # the GPU subset runs on numba's CUDA simulator unless a driver is there
        import ctypes.util
        if ctypes.util.find_library("cuda") is None:
            os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    import te                           # noqa: F401  (import once, before the first case)
    for line in sys.stdin:
        req = json.loads(line)
        print(f"=== case {req['seed']}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        kind, detail = _verdict(req["source"], req["seed"],
                                gpu=bool(every) and req["seed"] % every == 0)
        results.write(json.dumps({"seed": req["seed"], "kind": kind, "detail": detail,
                                  "seconds": round(time.perf_counter() - t0, 3)}) + "\n")


if __name__ == "__main__":
    main()
