"""Every collective of nn.distributed against numpy, on however many ranks run it.

Each rank's input is drawn from a seed and the rank, so every rank can compute all ranks'
inputs and the numpy result locally. Run by tests/distributed/test_mpi_collectives.py (inside
``mpiexec -n 2 pytest``) and, as a script, by tests/nn/test_distributed_collectives.py under
``mpiexec -n 3``; as a script it prints ``ok <world size> <checks>`` and exits 0, or raises.
"""
import os
import sys

import numpy as np

DTYPES = ("float32", "float64", "int32", "int64", "bool", "float16")
SHAPES = ((), (5,), (3, 4), (2, 3, 4))
TOL = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-12}


def value(dtype, shape, rank, seed, for_product=False):
    """Rank ``rank``'s input (small integers for products, so nothing overflows)."""
    rng = np.random.default_rng([seed, rank])
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        low, high = (1, 3) if for_product else (-50, 50)
        return rng.integers(low, high, shape).astype(dtype)
    if for_product:
        return (0.5 + rng.random(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def numpy_reduce(arrays, op):
    stack = np.stack(arrays)
    if stack.dtype == bool:
        return {"SUM": stack.any(0), "MAX": stack.any(0), "MIN": stack.all(0),
                "PRODUCT": stack.all(0)}[op]
    wide = stack.astype("float64") if stack.dtype.kind == "f" else stack
    out = {"SUM": wide.sum(0), "AVG": wide.mean(0), "MAX": wide.max(0), "MIN": wide.min(0),
           "PRODUCT": wide.prod(0)}[op]
    return np.asarray(out).astype(stack.dtype)


def close(got, want, dtype, what, inputs=None):
    """``got`` == ``want``; for floats within the dtype's rounding of a reduction whose
    partial sums reach the sum of the inputs' magnitudes (MPI's summation order is its own)."""
    got = np.asarray(got)
    if got.shape != np.shape(want) or got.dtype != np.asarray(want).dtype:
        raise AssertionError(f"{what}: got {got.dtype}{got.shape}, want "
                             f"{np.asarray(want).dtype}{np.shape(want)}")
    if dtype in TOL:
        want = np.asarray(want, "float64")
        scale = np.abs(want) if inputs is None else np.abs(np.stack(inputs)).sum(0)
        err = np.abs(got.astype("float64") - want)
        if not np.all(err <= TOL[dtype] * (scale + 1)):
            raise AssertionError(f"{what}: max error {err.max():.3g} (got {got}, want {want})")
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check_all():
    """Run the checks; returns how many comparisons passed."""
    import nn
    import nn.distributed as dist
    R, me = dist.get_world_size(), dist.get_rank()
    checks = 0
    seed = 0
    for dtype in DTYPES:
        ops = ["SUM", "MAX", "MIN", "PRODUCT"] + (["AVG"] if dtype.startswith("float") else [])
        for shape in SHAPES:
            for op in ops:
                for async_op in (False, True):
                    seed += 1
                    inputs = [value(dtype, shape, r, seed, op == "PRODUCT") for r in range(R)]
                    t = nn.tensor(inputs[me].copy())
                    work = dist.all_reduce(t, getattr(dist.ReduceOp, op), async_op=async_op)
                    if async_op:
                        work.wait()
                        assert work.is_completed()
                    close(t.numpy(), numpy_reduce(inputs, op), dtype,
                          f"all_reduce {op} {dtype}{shape} async={async_op}",
                          inputs if op in ("SUM", "AVG") else None)
                    checks += 1
            seed += 1
            inputs = [value(dtype, shape, r, seed) for r in range(R)]
            for src in range(R):
                t = nn.tensor(inputs[me].copy())
                dist.broadcast(t, src=src)
                close(t.numpy(), inputs[src], dtype, f"broadcast src={src} {dtype}{shape}")
                checks += 1
            t = nn.tensor(inputs[me].copy())
            dist.reduce(t, dst=R - 1, op=dist.ReduceOp.MAX)
            close(t.numpy(), numpy_reduce(inputs, "MAX") if me == R - 1 else inputs[me], dtype,
                  f"reduce MAX {dtype}{shape}")
            outs = [nn.tensor(np.zeros(shape, dtype)) for _ in range(R)]
            work = dist.all_gather(outs, nn.tensor(inputs[me]), async_op=True)
            work.wait()
            for r in range(R):
                close(outs[r].numpy(), inputs[r], dtype, f"all_gather {dtype}{shape}")
            flat = nn.tensor(np.zeros((R,) + shape, dtype))
            dist.all_gather_into_tensor(flat, nn.tensor(inputs[me]))
            close(flat.numpy(), np.stack(inputs), dtype, f"all_gather_into_tensor {dtype}")
            gathered = [nn.tensor(np.zeros(shape, dtype)) for _ in range(R)] if me == 0 else None
            dist.gather(nn.tensor(inputs[me]), gathered, dst=0)
            if me == 0:
                for r in range(R):
                    close(gathered[r].numpy(), inputs[r], dtype, f"gather {dtype}{shape}")
            out = nn.tensor(np.zeros(shape, dtype))
            pieces = [nn.tensor(inputs[r]) for r in range(R)] if me == R - 1 else None
            dist.scatter(out, pieces, src=R - 1)
            close(out.numpy(), inputs[me], dtype, f"scatter {dtype}{shape}")
            checks += 4
            if dtype != "bool":
                per_rank = [[value(dtype, shape, 100 * r + k, seed) for k in range(R)]
                            for r in range(R)]
                out = nn.tensor(np.zeros(shape, dtype))
                dist.reduce_scatter(out, [nn.tensor(a) for a in per_rank[me]])
                column = [per_rank[r][me] for r in range(R)]
                close(out.numpy(), numpy_reduce(column, "SUM"), dtype,
                      f"reduce_scatter {dtype}{shape}", column)
                out = nn.tensor(np.zeros(shape, dtype))
                dist.reduce_scatter_tensor(out, nn.tensor(np.stack(per_rank[me])),
                                           op=dist.ReduceOp.MIN, async_op=True).wait()
                close(out.numpy(), numpy_reduce([per_rank[r][me] for r in range(R)], "MIN"),
                      dtype, f"reduce_scatter_tensor {dtype}{shape}")
                checks += 2
    # strided and transposed views: reduced through a buffer, written back into the view
    base = value("float64", (4, 6), me, 999)
    t = nn.tensor(base.copy())
    view = t[:, ::2].t()
    dist.all_reduce(view)
    want = base.copy()
    want[:, ::2] = sum(value("float64", (4, 6), r, 999) for r in range(R))[:, ::2]
    close(t.numpy(), want, "float64", "all_reduce of a strided view")
    a2a_in = np.arange(R * 3, dtype="int64") + 100 * me
    out = nn.tensor(np.zeros(R * 3, "int64"))
    dist.all_to_all_single(out, nn.tensor(a2a_in))
    close(out.numpy(), np.concatenate([np.arange(me * 3, me * 3 + 3) + 100 * r
                                       for r in range(R)]), "int64", "all_to_all_single")
    # objects
    objs = [None] * R
    dist.all_gather_object(objs, {"rank": me, "data": [me] * me})
    assert objs == [{"rank": r, "data": [r] * r} for r in range(R)], objs
    items = ["a", me] if me == 1 else [None, None]
    dist.broadcast_object_list(items, src=1)
    assert items == ["a", 1], items
    found = [None] * R if me == 0 else None
    dist.gather_object((me, "x"), found, dst=0)
    assert me != 0 or found == [(r, "x") for r in range(R)], found
    got = [None]
    dist.scatter_object_list(got, [f"to {r}" for r in range(R)] if me == 0 else None, src=0)
    assert got == [f"to {me}"], got
    checks += 6
    # a subgroup of the last two ranks: group ranks, world-rank src, collectives inside it
    members = [R - 2, R - 1]
    sub = dist.new_group(members)
    if me in members:
        assert dist.get_world_size(sub) == 2 and dist.get_rank(sub) == members.index(me)
        assert dist.get_process_group_ranks(sub) == members
        t = nn.tensor(np.array([float(me)]))
        dist.all_reduce(t, group=sub)
        close(t.numpy(), np.array([float(sum(members))]), "float64", "all_reduce on a group")
        t = nn.tensor(np.array([float(me)]))
        dist.broadcast(t, src=R - 1, group=sub)
        close(t.numpy(), np.array([float(R - 1)]), "float64", "broadcast on a group")
        dist.destroy_process_group(sub)
    else:
        assert sub is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1
    dist.barrier()
    dist.barrier(async_op=True).wait()
    return checks + 2


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    import nn.distributed as dist
    dist.init_process_group("mpi")
    n = check_all()
    if dist.get_rank() == 0:
        print(f"ok {dist.get_world_size()} {n}")
    dist.destroy_process_group()
