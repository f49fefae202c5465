"""The differential fuzzer in CI: a fixed range of seeds, numpy = interpreter = compiled code,
each case in a worker process with guard-paged inputs and outputs (tools/fuzz.py runs any
number of seeds). Also checks that the runner attributes crashes and hangs to their case."""
import textwrap

import numpy as np
import pytest

from tests.fuzz import harness
from tests.fuzz.gen import Case, generate
from tests.fuzz.runner import counts, run_cases

CI_SEEDS = range(200)
FAILURES = ("mismatch", "error", "crash", "hang")


def test_generator_is_deterministic_and_well_defined():
    a, b = generate(17), generate(17)
    assert a.source == b.source and a.expect == b.expect
    seen = set()
    for seed in range(60):
        case = generate(seed)
        seen |= case.features
        ns = {"__name__": "fuzzcase"}
        harness.STRICT = True              # no signed 32/64-bit overflow on its inputs
        try:
            exec(case.source.split("# the schedule")[0], ns)
        finally:
            harness.STRICT = False
    for feature in ("gather", "stencil", "reduce", "cast", "floordiv", "floormod", "select",
                    "if_then_else", "split", "fuse", "reorder", "compute_at", "size0",
                    "size1", "var_int64", "divmod_index", "padded"):
        assert feature in seen, feature


def test_numpy_semantics_follow_the_dsl():
    assert harness.add("int8", 127, 1) == -128                       # narrow ints wrap
    assert harness.floordiv("int32", -7, 2) == -4 and harness.floormod("int32", -7, 2) == 1
    assert harness.truncdiv("int32", -7, 2) == -3 and harness.truncmod("int32", -7, 2) == -1
    assert harness.cast("int8", np.float32(-2.75)) == -2              # truncation
    assert harness.cast("uint8", np.int32(-1)) == 255
    assert harness.nonzero("int8", np.int8(-128)) == -127
    empty = np.zeros((2, 0), "int16")
    np.testing.assert_array_equal(harness.reduce("max", "int16", empty, (2, 0)), [-32768] * 2)
    harness.STRICT = True
    try:
        with pytest.raises(harness.Undefined):
            harness.mul("int32", 2**16, 2**15)
    finally:
        harness.STRICT = False


def _case(seed, body):
    src = textwrap.dedent("""
        import numpy as np
        import te
        from tests.fuzz import harness as H
        A = te.placeholder((4,), 'int32', name='A')
        B = te.compute((4,), lambda i: A[i] + 1, name='B')
        s = te.create_schedule(B.op)
        ARGS = [A, B]
        INPUTS = [np.arange(4, dtype='int32')]
        EXPECT = 'ok'
        EXACT = True
        def reference(A):
            return [A + 1]
        """) + textwrap.dedent(body)
    return Case(seed, src)


def test_runner_attributes_crashes_and_hangs():
    cases = [_case(1, ""),
             _case(2, "import ctypes; ctypes.string_at(0)"),              # SIGSEGV
             _case(3, "def reference(A):\n    return [A + 2]"),          # wrong answer
             _case(4, "import time; time.sleep(60)"),                    # a hang
             _case(5, "s[B].split(B.op.axis[0], factor=0)"),                  # refused
             _case(6, "")]
    res = run_cases(cases, workers=1, timeout=8)
    assert [r["kind"] for r in res] == ["pass", "crash", "mismatch", "hang", "refused", "pass"]
    assert "SIGSEGV" in res[1]["detail"] and "got 1, numpy 2" in res[2]["detail"]


@pytest.mark.slow
def test_fuzz_fixed_seeds():
    """The CI run: no mismatch, error, crash or hang over the fixed seeds."""
    from tests.fuzz.runner import worker_env
    res = run_cases([generate(s) for s in CI_SEEDS], workers=2, timeout=60,
                    env=worker_env(gpu_every=10))
    c = counts(res)
    bad = [f"seed {r['seed']}: {r['kind']}: {r['detail'][:240]}" for r in res
           if r["kind"] in FAILURES]
    assert c["pass"] + c["refused"] == c["cases"], \
        f"{c}; run python tools/fuzz.py --seed N --cases 1 to reproduce:\n" + "\n".join(bad)
    assert c["pass"] >= c["cases"] // 2, c        # the refusals do not swallow the fuzzing
    gpu = [r for r in res if r["kind"] == "pass" and "gpu ok" in r["detail"]]
    assert len(gpu) >= 5, [r["detail"] for r in res if "gpu" in (r["detail"] or "")]
