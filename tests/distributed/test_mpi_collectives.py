"""nn.distributed's collectives against numpy on the ranks of this MPI job (2 in CI; the
3-rank run is tests/nn/test_distributed_collectives.py), and the DistributedSampler with the
world's rank and size."""
import numpy as np

import nn
import nn.distributed as dist
from check_collectives import check_all


def test_collectives_agree_with_numpy(world):
    assert check_all() > 300


def test_distributed_sampler_from_the_world(world):
    rank, size = world
    data = nn.data.TensorDataset(nn.tensor(np.arange(11)))
    sampler = nn.data.distributed.DistributedSampler(data, shuffle=True, seed=5)
    sampler.set_epoch(2)
    mine = list(sampler)
    everyone = [None] * size
    dist.all_gather_object(everyone, mine)
    order = np.random.default_rng(5 + 2).permutation(11).tolist()
    padded = (order * size)[:len(mine) * size]
    assert everyone == [padded[r::size] for r in range(size)]
    loader = nn.data.DataLoader(data, batch_size=4, sampler=sampler)
    seen = np.concatenate([b[0].numpy() for b in loader]).tolist()
    assert seen == mine


def test_gpu_tensors_go_through_host_buffers(world):
    """CUDA tensors (numba's simulator in CI) are reduced through a host copy and written
    back to the device; the result stays a GPU tensor."""
    rank, size = world
    x = np.arange(12, dtype="float32").reshape(3, 4) * (rank + 1)
    t = nn.tensor(x).cuda()
    dist.all_reduce(t, dist.ReduceOp.AVG)
    assert t.is_cuda
    np.testing.assert_allclose(t.cpu().numpy(), np.arange(12).reshape(3, 4) * (size + 1) / 2)
    outs = [nn.zeros(3, 4).cuda() for _ in range(size)]
    dist.all_gather(outs, nn.tensor(x).cuda(), async_op=True).wait()
    for r, o in enumerate(outs):
        np.testing.assert_array_equal(o.cpu().numpy(), np.arange(12).reshape(3, 4) * (r + 1))
    b = nn.tensor(x).cuda()
    dist.broadcast(b, src=size - 1)
    np.testing.assert_array_equal(b.cpu().numpy(), np.arange(12).reshape(3, 4) * size)
