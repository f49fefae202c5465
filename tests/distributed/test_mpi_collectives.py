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
