"""Data-parallel training over MPI against one process on the whole batch: a CNN with
SyncBatchNorm under DistributedDataParallel, each rank on its 8 samples, ends with the same
weights and running statistics as the same CNN with BatchNorm trained on all ranks' samples at
once (SGD with momentum); no_sync accumulation equals one big step; uneven per-rank batches;
the broadcast from rank 0; unused parameters; all-reduce started while backward still runs."""
import numpy as np
import pytest

import nn
import nn.distributed as dist
from nn.parallel import DistributedDataParallel as DDP

PER_RANK = 8
RELATIVE_ERRORS = {}
STEPS = 4


def make_cnn(seed=0):
    nn.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Conv2d(4, 4, 3, stride=2), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Flatten(), nn.Linear(16, 3))


def batches(world, steps=STEPS, per_rank=PER_RANK):
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((per_rank * world, 3, 6, 6)).astype("float32") * 2 + 1,
             rng.integers(0, 3, per_rank * world)) for _ in range(steps)]


def train(model, data, sl, sync=True):
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(nn.tensor(x[sl])), nn.tensor(y[sl])).backward()
        opt.step()


def assert_same_state(got, want, rtol=1e-5):
    assert got.keys() == want.keys()
    for key in want:
        g, w = got[key].numpy(), want[key].numpy()
        scale = max(np.abs(w).max(), 1e-30)
        err = np.abs(g.astype("float64") - w).max() / scale
        assert err <= rtol, (key, err)
        RELATIVE_ERRORS[key] = err


def test_syncbn_ddp_matches_one_process_batchnorm(world):
    rank, size = world
    data = batches(size)
    ref = make_cnn()
    train(ref, data, slice(None))
    model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(make_cnn()))
    assert isinstance(model.module[1], nn.SyncBatchNorm)
    train(model, data, slice(rank * PER_RANK, (rank + 1) * PER_RANK))
    state = model.state_dict()
    assert all(k.startswith("module.") for k in state)
    assert_same_state(model.module.state_dict(), ref.state_dict())
    assert int(model.module[1].num_batches_tracked) == STEPS
    # every rank holds the same weights (not only close to the reference)
    mine = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    everyone = [None] * size
    dist.all_gather_object(everyone, mine)
    for other in everyone:
        np.testing.assert_array_equal(other, mine)


def test_syncbn_uneven_batches_forward_and_backward(world):
    rank, size = world
    counts = [3 + 5 * r for r in range(size)]           # 3, 8, 13... samples
    rng = np.random.default_rng(3)
    x = rng.standard_normal((sum(counts), 4, 5)).astype("float64") * 3 + 2
    g = rng.standard_normal(x.shape)
    start = sum(counts[:rank])
    mine = slice(start, start + counts[rank])
    bn = nn.BatchNorm1d(4, dtype="float64")
    sync = nn.SyncBatchNorm(4, dtype="float64")
    for m in (bn, sync):
        with nn.no_grad():
            m.weight.copy_(nn.tensor(np.linspace(0.5, 2, 4)))
            m.bias.copy_(nn.tensor(np.linspace(-1, 1, 4)))
    xa = nn.tensor(x, requires_grad=True)
    bn(xa).backward(nn.tensor(g))
    xs = nn.tensor(x[mine], requires_grad=True)
    out = sync(xs)
    out.backward(nn.tensor(g[mine]))
    assert out.grad_fn.name() == "SyncBatchNormBackward"
    np.testing.assert_allclose(out.detach().numpy(), _bn_out(x, bn)[mine], rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(xs.grad.numpy(), xa.grad.numpy()[mine], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sync.running_mean.numpy(), bn.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(sync.running_var.numpy(), bn.running_var.numpy(), rtol=1e-12)
    # the weight and bias gradients are the local sums (DDP averages them), as PyTorch's
    total_w = nn.tensor(sync.weight.grad.numpy().copy())
    dist.all_reduce(total_w)
    np.testing.assert_allclose(total_w.numpy(), bn.weight.grad.numpy(), rtol=1e-10)


def test_syncbn_with_an_empty_rank(world):
    """Rank 0 holds no sample: the others' statistics and gradient sums are the global ones."""
    rank, size = world
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6 * (size - 1), 3, 2)) + 1
    g = rng.standard_normal(x.shape)
    mine = slice(0, 0) if rank == 0 else slice(6 * (rank - 1), 6 * rank)
    bn, sync = nn.BatchNorm1d(3, dtype="float64"), nn.SyncBatchNorm(3, dtype="float64")
    xa = nn.tensor(x, requires_grad=True)
    bn(xa).backward(nn.tensor(g))
    xs = nn.tensor(x[mine], requires_grad=True)
    out = sync(xs)
    out.backward(nn.tensor(g[mine]))
    assert out.shape == (len(x[mine]), 3, 2)
    np.testing.assert_allclose(out.detach().numpy(), _bn_out(x, bn)[mine], rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(xs.grad.numpy(), xa.grad.numpy()[mine], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sync.running_var.numpy(), bn.running_var.numpy(), rtol=1e-12)


def _bn_out(x, bn):
    """``bn``'s output on ``x`` with batch statistics, without touching its running stats."""
    mean = x.mean((0, 2), keepdims=True)
    var = x.var((0, 2), keepdims=True)
    w = bn.weight.detach().numpy().reshape(1, -1, 1)
    b = bn.bias.detach().numpy().reshape(1, -1, 1)
    return (x - mean) / np.sqrt(var + bn.eps) * w + b


def test_no_sync_accumulation_equals_one_big_step(world):
    rank, size = world
    (x, y), = batches(size, steps=1, per_rank=2 * PER_RANK)
    loss_fn = nn.MSELoss()
    target = nn.tensor(np.eye(3, dtype="float32")[y])
    ref = nn.Sequential(nn.Linear(108, 6), nn.Tanh(), nn.Linear(6, 3))
    loss_fn(ref(nn.tensor(x.reshape(len(x), -1))), target).backward()
    nn.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(108, 6), nn.Tanh(), nn.Linear(6, 3)))
    model.module.load_state_dict(ref.state_dict())
    flat = x.reshape(len(x), -1)
    mine = np.arange(rank * 2 * PER_RANK, (rank + 1) * 2 * PER_RANK)
    halves = (mine[:PER_RANK], mine[PER_RANK:])
    with model.no_sync():
        (loss_fn(model(nn.tensor(flat[halves[0]])), target[halves[0].tolist()]) / 2).backward()
    local = [p.grad.numpy().copy() for p in model.parameters()]
    (loss_fn(model(nn.tensor(flat[halves[1]])), target[halves[1].tolist()]) / 2).backward()
    for p, r, before in zip(model.parameters(), ref.parameters(), local):
        np.testing.assert_allclose(p.grad.numpy(), r.grad.numpy(), rtol=1e-5, atol=1e-7)
    # inside no_sync nothing was averaged: the first half's gradients differ between ranks
    everyone = [None] * size
    dist.all_gather_object(everyone, local[0])
    assert not np.allclose(everyone[0], everyone[1])


def test_parameters_and_buffers_broadcast_from_rank_zero(world):
    rank, size = world
    net = make_cnn(seed=100 + rank)                   # different weights on each rank
    with nn.no_grad():
        net[1].running_mean.fill_(float(rank))
    want = make_cnn(seed=100).state_dict()
    model = DDP(net)
    for key, value in model.module.state_dict().items():
        if key.endswith("running_mean"):
            assert np.all(value.numpy() == 0)
        elif not key.endswith("num_batches_tracked"):
            np.testing.assert_array_equal(value.numpy(), want[key].numpy())


def test_find_unused_parameters(world):
    rank, size = world

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 4)
            self.head_a = nn.Linear(4, 2)
            self.head_b = nn.Linear(4, 2)

        def forward(self, x, use_b):
            h = self.body(x)
            return self.head_b(h) if use_b else self.head_a(h)

    nn.manual_seed(1)
    model = DDP(TwoHeads(), find_unused_parameters=True)
    x = nn.tensor(np.random.default_rng(rank).standard_normal((5, 4)).astype("float32"))
    model(x, use_b=(rank == 1)).sum().backward()     # head_b used on rank 1 only
    grads = [None] * size
    dist.all_gather_object(grads, {n: p.grad.numpy() for n, p in
                                   model.module.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        np.testing.assert_array_equal(grads[0][name], grads[1][name])
    # head_a is used on every rank but 1: its gradient is their sum over the world size
    nn.manual_seed(1)
    alone = TwoHeads()
    for r in range(size):
        if r != 1:
            xr = np.random.default_rng(r).standard_normal((5, 4)).astype("float32")
            alone(nn.tensor(xr), use_b=False).sum().backward()
    np.testing.assert_allclose(grads[0]["head_a.weight"], alone.head_a.weight.grad.numpy() / size,
                               rtol=1e-5)
    # without detection, the unreduced bucket is reported at the next forward
    strict = DDP(TwoHeads(), bucket_cap_mb=1e-6)
    strict(x, use_b=False).sum().backward()
    with pytest.raises(RuntimeError, match="find_unused_parameters=True"):
        strict(x, use_b=False)


def test_all_reduce_starts_during_backward(world):
    """Bucket all-reduces start from the gradient hooks while backward still computes the
    earlier layers' gradients: the log shows each start before the next layer's gradient."""
    rank, size = world
    nn.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
    model = DDP(net, bucket_cap_mb=200 / 2 ** 20)      # about one layer's gradients a bucket
    log = []
    for name, p in net.named_parameters():
        p.register_post_accumulate_grad_hook(lambda p, name=name: log.append(("grad", name)))
    import nn.parallel.distributed as ddp_module
    real_all_reduce = ddp_module.dist.all_reduce
    real_wait = dist.Work.wait

    def logged_all_reduce(tensor, *args, **kwargs):
        log.append(("start", tensor.numel()))
        return real_all_reduce(tensor, *args, **kwargs)

    def logged_wait(self, timeout=None):
        log.append(("wait",))
        return real_wait(self, timeout)

    ddp_module.dist.all_reduce = logged_all_reduce
    dist.Work.wait = logged_wait
    try:
        x = nn.tensor(np.ones((3, 8), "float32") * (rank + 1))
        model(x).sum().backward()
    finally:
        ddp_module.dist.all_reduce = real_all_reduce
        dist.Work.wait = real_wait
    kinds = [entry[0] for entry in log]
    assert len(model.bucket_names) >= 3
    assert kinds.count("start") == len(model.bucket_names)
    first_start = kinds.index("start")
    last_grad = len(kinds) - 1 - kinds[::-1].index("grad")
    assert first_start < last_grad, log                 # overlap: started mid-backward
    assert ("grad", "0.weight") in log[first_start:]    # the first layer came after it
    assert kinds.index("wait") > kinds.index("start")
