"""nn.distributed misuses get clear errors: MPI missing (naming the extra to install), a
collective or DDP before init_process_group, wrong backends and ranks, bad ops, lists and
ranks given to collectives, bad DistributedSampler, SyncBatchNorm and DDP arguments."""
import sys

import numpy as np
import pytest

import nn
import nn.distributed as dist
from nn.data.distributed import DistributedSampler
from nn.distributed import run as launcher
from nn.modules.sync_batchnorm import _SyncBatchNormFunction
from nn.parallel import DistributedDataParallel as DDP

pytest.importorskip("mpi4py")


@pytest.fixture
def no_world():
    if dist.is_initialized():
        dist.destroy_process_group()
    yield


@pytest.fixture
def world(no_world):
    dist.init_process_group("mpi")
    yield
    dist.destroy_process_group()


def test_mpi_missing_names_the_extra(no_world, monkeypatch):
    from nn.distributed import process_group
    monkeypatch.setattr(process_group, "_MPI", [])       # as in a process that never had it
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[distributed\]"'):
        dist.init_process_group("mpi")
    assert not dist.is_mpi_available()
    assert not dist.is_initialized()


@pytest.mark.parametrize("call", [
    lambda: dist.all_reduce(nn.ones(2)), lambda: dist.broadcast(nn.ones(2), 0),
    lambda: dist.get_rank(), lambda: dist.get_world_size(), lambda: dist.barrier(),
    lambda: dist.new_group([0]), lambda: dist.all_gather_object([None], 1),
    lambda: DDP(nn.Linear(2, 2)), lambda: DistributedSampler(list(range(4)))])
def test_before_init_process_group(no_world, call):
    with pytest.raises(RuntimeError, match="init_process_group"):
        call()


def test_init_arguments(no_world):
    with pytest.raises(ValueError, match="backend must be 'mpi'"):
        dist.init_process_group("nccl")
    with pytest.raises(ValueError, match="rank=3, but MPI says 0"):
        dist.init_process_group("mpi", rank=3)
    assert not dist.is_initialized()


def test_collective_arguments(world):
    with pytest.raises(TypeError, match="op must be a nn.distributed.ReduceOp"):
        dist.all_reduce(nn.ones(2), "sum")
    with pytest.raises(TypeError, match="AVG needs a floating-point tensor, got int64"):
        dist.all_reduce(nn.tensor(np.arange(3)), dist.ReduceOp.AVG)
    with pytest.raises(TypeError, match="BAND needs an integer or bool tensor"):
        dist.all_reduce(nn.ones(2), dist.ReduceOp.BAND)
    with pytest.raises(TypeError, match="tensor must be a nn.Tensor, got ndarray"):
        dist.all_reduce(np.ones(2))
    with pytest.raises(ValueError, match="src=2 is not a rank of this process group"):
        dist.broadcast(nn.ones(2), src=2)
    with pytest.raises(ValueError, match="tensor_list must be a list of 1 tensors"):
        dist.all_gather([nn.ones(2), nn.ones(2)], nn.ones(2))
    with pytest.raises(ValueError, match=r"tensor_list\[0\] has shape \[3\]"):
        dist.all_gather([nn.ones(3)], nn.ones(2))
    with pytest.raises(ValueError, match="output_tensor must have 1 x 2 elements"):
        dist.all_gather_into_tensor(nn.ones(3), nn.ones(2))
    with pytest.raises(ValueError, match="object_list must be a list of 1"):
        dist.all_gather_object([], 1)
    with pytest.raises(ValueError, match="rank 4 is out of range"):
        dist.new_group([0, 4])
    with pytest.raises(TypeError, match="group must be a ProcessGroup"):
        dist.all_reduce(nn.ones(2), group="world")


def test_sampler_arguments():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval "
                                         r"\[0, 1\]"):
        DistributedSampler(list(range(4)), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(list(range(4)), num_replicas=2, rank=-1)
    with pytest.raises(ValueError, match="num_replicas must be at least 1"):
        DistributedSampler(list(range(4)), num_replicas=0, rank=0)
    with pytest.raises(TypeError, match="rank must be an int"):
        DistributedSampler(list(range(4)), num_replicas=2, rank=1.0)


def test_sync_batchnorm_and_ddp_arguments(world):
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        nn.SyncBatchNorm(3)(nn.ones(3))
    x = nn.tensor(np.random.default_rng(0).standard_normal((4, 2)), requires_grad=True)
    w = nn.ones(2, dtype="float64", requires_grad=True)
    y = _SyncBatchNormFunction.apply(x, w, None, None, None, 1e-5, 0.1, None)
    (gx,) = nn.autograd.grad(y.square().sum(), x, create_graph=False)
    assert gx.shape == (4, 2)
    with pytest.raises(RuntimeError, match="does not support double backward"):
        nn.autograd.grad(_SyncBatchNormFunction.apply(x, w, None, None, None, 1e-5, 0.1, None)
                         .square().sum(), x, create_graph=True)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        _SyncBatchNormFunction.apply(nn.ones(1, 2), None, None, None, None, 1e-5, 0.1, None)
    with pytest.raises(ValueError, match="bucket_cap_mb must be a positive"):
        DDP(nn.Linear(2, 2), bucket_cap_mb=0)
    with pytest.raises(TypeError, match="module must be a nn.Module"):
        DDP(lambda x: x)
    model = DDP(nn.Linear(2, 2))
    loss = model(nn.ones(3, 2)).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="each forward under DDP allows one backward"):
        loss.backward()
    with model.no_sync():
        loss = model(nn.ones(3, 2)).sum()
    loss.backward(retain_graph=True)
    loss.backward()                                     # local accumulation: no limit
    frozen = nn.Linear(2, 2)
    frozen.requires_grad_(False)
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires"):
        DDP(frozen)


def test_launcher_arguments(capsys):
    with pytest.raises(SystemExit):
        launcher.command(["-n", "0", "train.py"])
    assert "-n must be at least 1" in capsys.readouterr().err
