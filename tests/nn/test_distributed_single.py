"""nn.distributed in one process (an MPI world of one, no mpiexec needed) and from outside:
DistributedSampler against PyTorch's exact order, SyncBatchNorm's function against batch norm
(torch as the reference), convert_sync_batchnorm, DistributedDataParallel's one-process
training and state_dict keys, the launcher, and the collectives on 3 ranks (an ``mpiexec -n 3``
subprocess). The 2-rank tests are tests/distributed (run by ``mpiexec -n 2 pytest``)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import nn
import nn.distributed as dist
from nn.data.distributed import DistributedSampler
from nn.distributed import run as launcher
from nn.modules.sync_batchnorm import _SyncBatchNormFunction
from nn.parallel import DistributedDataParallel as DDP

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytest.importorskip("mpi4py")


@pytest.fixture
def world():
    """The default process group of this process alone (MPI's singleton start)."""
    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("mpi")
    yield
    dist.destroy_process_group()


# -- DistributedSampler -------------------------------------------------------------------------

@pytest.mark.parametrize("drop_last", [False, True])
def test_sampler_unshuffled_is_pytorchs_order(drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for n in (1, 2, 5, 10, 11, 17):
        for replicas in (1, 2, 3, 4, 7):
            if drop_last and n < replicas:
                continue
            for rank in range(replicas):
                data = list(range(n))
                ours = DistributedSampler(data, replicas, rank, shuffle=False,
                                          drop_last=drop_last)
                theirs = TorchSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
                assert list(ours) == list(theirs), (n, replicas, rank)
                assert len(ours) == len(theirs) and ours.total_size == theirs.total_size


def test_sampler_shuffled_same_permutation_on_every_rank():
    data = list(range(23))
    shares = [DistributedSampler(data, 4, r, shuffle=True, seed=3) for r in range(4)]
    for epoch in (0, 1):
        for s in shares:
            s.set_epoch(epoch)
        order = np.random.default_rng(3 + epoch).permutation(23).tolist()
        padded = order + order[:1]                   # 24 = 4 x 6: one index repeated
        assert [list(s) for s in shares] == [padded[r::4] for r in range(4)]
    shares[0].set_epoch(0)
    first = list(shares[0])
    shares[0].set_epoch(1)
    assert list(shares[0]) != first
    # seed + epoch: seed 3 at epoch 2 is seed 5 at epoch 0
    a, b = DistributedSampler(data, 4, 1, seed=3), DistributedSampler(data, 4, 1, seed=5)
    a.set_epoch(2)
    assert list(a) == list(b)
    dropped = DistributedSampler(data, 4, 2, seed=0, drop_last=True)
    assert len(dropped) == len(list(dropped)) == 5


def test_sampler_in_a_dataloader():
    data = nn.data.TensorDataset(nn.tensor(np.arange(10) * 10))
    sampler = DistributedSampler(data, num_replicas=3, rank=1, shuffle=False)
    got = [b[0].numpy().tolist() for b in nn.data.DataLoader(data, batch_size=2,
                                                               sampler=sampler)]
    assert got == [[10, 40], [70, 0]]                 # indices 1, 4, 7 and the padding 0


def test_sampler_takes_the_world(world):
    s = DistributedSampler(list(range(5)), shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (1, 0, [0, 1, 2, 3, 4])


# -- a world of one -----------------------------------------------------------------------------

def test_world_of_one_collectives_are_identities(world):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "mpi"
    x = np.arange(6, dtype="float32").reshape(2, 3)
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT):
        t = nn.tensor(x.copy())
        dist.all_reduce(t, op, async_op=True).wait()
        np.testing.assert_array_equal(t.numpy(), x)
    out = [nn.zeros(2, 3)]
    dist.all_gather(out, nn.tensor(x))
    np.testing.assert_array_equal(out[0].numpy(), x)
    objects = [None]
    dist.all_gather_object(objects, {"a": 1})
    assert objects == [{"a": 1}]
    t = nn.tensor(x.copy())
    version = t._version
    dist.broadcast(t, 0)
    assert t._version == version + 1                  # an in-place write, as PyTorch counts
    dist.barrier()


def test_destroy_then_init_again():
    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("mpi")
    with pytest.raises(RuntimeError, match="twice"):
        dist.init_process_group("mpi")
    dist.destroy_process_group()
    assert not dist.is_initialized()
    dist.init_process_group(backend="MPI", rank=0, world_size=1)
    dist.destroy_process_group()


# -- SyncBatchNorm ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,shape", [("float64", (6, 3)), ("float32", (5, 3, 7)),
                                         ("float64", (4, 3, 3, 5)), ("float32", (2, 3, 2, 2, 3))])
def test_sync_function_matches_torch_batch_norm(world, dtype, shape):
    """The synchronized forward and backward on a group of one: the global statistics come
    from the all-gathered (count, mean, M2), the gradient from the all-reduced sums."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 4 + 3).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w = np.linspace(0.5, 1.5, 3).astype(dtype)
    b = np.linspace(-1, 1, 3).astype(dtype)
    rm, rv = np.full(3, 0.2, dtype), np.full(3, 1.5, dtype)
    xt, wt, bt = (nn.tensor(a.copy(), requires_grad=True) for a in (x, w, b))
    rmt, rvt = nn.tensor(rm.copy()), nn.tensor(rv.copy())
    y = _SyncBatchNormFunction.apply(xt, wt, bt, rmt, rvt, 1e-5, 0.1, None)
    y.backward(nn.tensor(g))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    ty = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, True, 0.1, 1e-5)
    ty.backward(torch.tensor(g))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for ours, theirs in ((y.detach(), ty), (xt.grad, tx.grad), (wt.grad, tw.grad),
                         (bt.grad, tb.grad), (rmt, trm), (rvt, trv)):
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **tol)


def test_sync_function_on_gpu_tensors(world):
    """The same function on CUDA tensors (numba's simulator in CI): the kernels run on the
    device, the statistics go through host buffers; results as on the CPU."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 2, 3)).astype("float32")
    g = rng.standard_normal(x.shape).astype("float32")
    results = []
    for device in ("cpu", "cuda"):
        xt = nn.tensor(x).to(device).requires_grad_()
        w = nn.tensor(np.array([0.5, 2.0], "float32")).to(device).requires_grad_()
        rm, rv = nn.zeros(2).to(device), nn.ones(2).to(device)
        y = _SyncBatchNormFunction.apply(xt, w, None, rm, rv, 1e-5, 0.1, None)
        y.backward(nn.tensor(g).to(device))
        assert y.is_cuda == xt.grad.is_cuda == rm.is_cuda == (device == "cuda")
        results.append([t.cpu().numpy() for t in (y.detach(), xt.grad, w.grad, rm, rv)])
    for on_cpu, on_gpu in zip(*results):
        np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-5, atol=1e-6)


def test_sync_batchnorm_alone_is_batchnorm(world):
    x = nn.tensor(np.random.default_rng(1).standard_normal((4, 3, 5, 5)).astype("float32"))
    sync, plain = nn.SyncBatchNorm(3), nn.BatchNorm2d(3)
    np.testing.assert_array_equal(sync(x).detach().numpy(), plain(x).detach().numpy())
    np.testing.assert_array_equal(sync.running_var.numpy(), plain.running_var.numpy())
    sync.eval()
    plain.eval()
    np.testing.assert_array_equal(sync(x).detach().numpy(), plain(x).detach().numpy())
    assert sync.state_dict().keys() == plain.state_dict().keys()
    assert "num_batches_tracked" in repr(sync.state_dict().keys())


def test_convert_sync_batchnorm_shares_parameters():
    net = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4, momentum=0.3),
                        nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4, affine=False)))
    net.eval()
    keys = net.state_dict().keys()
    weight = net[1].weight
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert converted is net
    assert type(net[1]) is nn.SyncBatchNorm and type(net[2][1]) is nn.SyncBatchNorm
    assert net[1].weight is weight and net[1].momentum == 0.3 and not net[1].training
    assert net[2][1].weight is None and net[2][1].affine is False
    assert net.state_dict().keys() == keys
    alone = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(2))
    assert type(alone) is nn.SyncBatchNorm


# -- DistributedDataParallel --------------------------------------------------------------------

def _net():
    nn.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))


def test_ddp_alone_trains_as_the_module(world):
    x = nn.tensor(np.random.default_rng(2).standard_normal((8, 6)).astype("float32"))
    plain, model = _net(), DDP(_net(), bucket_cap_mb=1e-4)
    assert len(model.bucket_names) > 1 and model.bucket_names[0][0] == "2.bias"
    for m in (plain, model):
        opt = nn.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            m(x).square().mean().backward()
            opt.step()
    for (k, a), (k2, b) in zip(plain.state_dict().items(), model.state_dict().items()):
        assert k2 == "module." + k
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    fresh = _net()
    fresh.load_state_dict({k[len("module."):]: v for k, v in model.state_dict().items()})
    model.load_state_dict(model.state_dict())
    assert model.module is model._modules["module"]


# -- the launcher and three ranks ---------------------------------------------------------------

def test_launcher_command():
    cmd, env = launcher.command(["-n", "3", "train.py", "--lr", "0.1"])
    assert os.path.basename(cmd[0]) == "mpiexec" and cmd[1:3] == ["-n", "3"]
    assert cmd[3:] == [sys.executable, "train.py", "--lr", "0.1"]
    cmd, env = launcher.command(["--threads", "2", "-n", "2", "-m", "pkg.main"])
    assert cmd[-2:] == ["-m", "pkg.main"] and env["TW_NUM_THREADS"] == "2"


def test_launcher_runs_a_script(tmp_path):
    script = tmp_path / "hello.py"
    # each rank writes its own file: the two processes' stdout reach the launcher's through
    # mpiexec's forwarding, where their lines may interleave mid-line
    script.write_text("import os, sys, nn.distributed as dist\n"
                      "dist.init_process_group('mpi')\n"
                      "line = f'rank {dist.get_rank()} {dist.get_world_size()} '"
                      " + os.environ['TW_NUM_THREADS']\n"
                      "with open(os.path.join(sys.argv[1], f'out{dist.get_rank()}.txt'), 'w') as f:\n"
                      "    f.write(line)\n"
                      "dist.destroy_process_group()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TW_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-m", "nn.distributed.run", "-n", "2", str(script),
                          str(tmp_path)],
                         capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    threads = str(max(1, (os.cpu_count() or 1) // 2))
    lines = sorted((tmp_path / f"out{r}.txt").read_text() for r in range(2))
    assert lines == [f"rank 0 2 {threads}", f"rank 1 2 {threads}"], out.stdout


def test_collectives_on_three_ranks():
    """Every collective against numpy on 3 MPI processes (tests/distributed/
    check_collectives.py, which the 2-rank MPI tests run too)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TW_NUM_THREADS="1")
    out = subprocess.run([launcher.find_mpiexec(), "-n", "3", sys.executable,
                          str(ROOT / "tests" / "distributed" / "check_collectives.py")],
                         capture_output=True, text=True, timeout=180, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    word, size, checks = out.stdout.split()[-3:]
    assert (word, size) == ("ok", "3") and int(checks) > 400
