"""nn.data against torch.utils.data's semantics: samplers (order, coverage, replacement,
lengths), datasets and random_split, default_collate on nested structures (types and dtypes
as torch's), the DataLoader's batching, lengths and reproducibility, worker processes (the same
batches in the same order as in-process loading, exceptions with the worker's traceback,
get_worker_info, seeds, early exit, persistent workers), and the digits data set."""
import collections
import os
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import nn
import nn.data as data
import nn.datasets as datasets


class Squares(data.Dataset):
    """Sample i is (i as a float32 row, i * i)."""

    def __init__(self, n=10):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return nn.tensor([float(i), -float(i)]), i * i

    def __len__(self):
        return self.n


class Counter(data.IterableDataset):
    """0 .. n-1; in a worker, only the worker's interleaved share."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = data.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


def as_lists(batches):
    """Batches of (tensor, tensor) as nested lists, for comparison."""
    return [[t.tolist() for t in batch] for batch in batches]


# ----------------------------------------------------------------------------- samplers

def test_sequential_sampler():
    sampler = data.SequentialSampler(range(5))
    assert list(sampler) == [0, 1, 2, 3, 4] and len(sampler) == 5
    assert list(sampler) == list(tud.SequentialSampler(range(5)))


def test_random_sampler_permutation_and_seed():
    nn.manual_seed(3)
    first = list(data.RandomSampler(range(20)))
    assert sorted(first) == list(range(20)) and first != list(range(20))
    nn.manual_seed(3)
    assert list(data.RandomSampler(range(20))) == first
    sampler = data.RandomSampler(range(20))
    nn.manual_seed(3)                               # read at iteration time
    assert list(sampler) == first
    one = list(data.RandomSampler(range(20), generator=np.random.default_rng(1)))
    assert one == list(data.RandomSampler(range(20), generator=np.random.default_rng(1)))


@pytest.mark.parametrize("replacement, num_samples", [(False, 25), (False, 7), (True, 30)])
def test_random_sampler_num_samples_like_torch(replacement, num_samples):
    ours = list(data.RandomSampler(range(10), replacement, num_samples))
    theirs = list(tud.RandomSampler(range(10), replacement, num_samples))
    assert len(ours) == len(theirs) == num_samples
    assert len(data.RandomSampler(range(10), replacement, num_samples)) == num_samples
    assert all(0 <= i < 10 for i in ours)
    if not replacement:                 # whole permutations, then part of one
        for picks in (ours, theirs):
            counts = np.bincount(picks, minlength=10)
            assert counts.max() - counts.min() <= 1
            assert len(set(picks)) == min(num_samples, 10)
    assert len(data.RandomSampler(range(10))) == len(tud.RandomSampler(range(10))) == 10


def test_subset_random_sampler():
    indices = [3, 8, 11, 40]
    sampler = data.SubsetRandomSampler(indices)
    assert sorted(sampler) == indices and len(sampler) == 4
    assert sorted(tud.SubsetRandomSampler(indices)) == sorted(sampler)


def test_weighted_random_sampler():
    weights = [0.0, 1.0, 3.0, 0.0, 6.0]
    nn.manual_seed(0)
    picks = list(data.WeightedRandomSampler(weights, 20000))
    counts = np.bincount(picks, minlength=5) / 20000
    np.testing.assert_allclose(counts, np.array(weights) / 10, atol=0.015)
    assert len(data.WeightedRandomSampler(nn.tensor(weights), 7)) == 7
    once = list(data.WeightedRandomSampler(weights, 3, replacement=False))
    assert sorted(once) == [1, 2, 4]
    assert sorted(tud.WeightedRandomSampler(weights, 3, replacement=False)) == [1, 2, 4]
    nn.manual_seed(5)
    again = list(data.WeightedRandomSampler(weights, 50))
    nn.manual_seed(5)
    assert list(data.WeightedRandomSampler(weights, 50)) == again


@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_like_torch(drop_last):
    ours = data.BatchSampler(data.SequentialSampler(range(10)), 3, drop_last)
    theirs = tud.BatchSampler(tud.SequentialSampler(range(10)), 3, drop_last)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


# ----------------------------------------------------------------------------- datasets

def test_tensor_concat_and_subset_datasets():
    x, y = nn.arange(12).reshape(6, 2), nn.arange(6) * 10
    ds = data.TensorDataset(x, y)
    assert len(ds) == 6 and [t.tolist() for t in ds[4]] == [[8, 9], 40]
    both = ds + data.TensorDataset(x[:2], y[:2])
    assert isinstance(both, data.ConcatDataset) and len(both) == 8
    assert both[6][1].item() == 0 and both[-1][1].item() == 10 and both[5][1].item() == 50
    assert both.cumulative_sizes == [6, 8]
    sub = data.Subset(ds, [5, 0, 3])
    assert len(sub) == 3 and [s[1].item() for s in sub.__getitems__([0, 2])] == [50, 30]
    assert sub[1][1].item() == 0


def test_chain_dataset():
    chained = Counter(3) + Counter(2)
    assert isinstance(chained, data.ChainDataset)
    assert list(chained) == [0, 1, 2, 0, 1] and len(chained) == 5


@pytest.mark.parametrize("n, fractions", [(10, [0.33, 0.33, 0.34]), (1797, [0.8, 0.2]),
                                          (7, [0.5, 0.5]), (11, [0.1, 0.2, 0.3, 0.4])])
def test_random_split_fractions_like_torch(n, fractions):
    ours = data.random_split(range(n), fractions)
    theirs = tud.random_split(range(n), fractions)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(i for s in ours for i in s) == list(range(n))      # disjoint, covering


def test_random_split_is_reproducible():
    nn.manual_seed(11)
    a = [list(s) for s in data.random_split(range(30), [20, 10])]
    nn.manual_seed(11)
    b = [list(s) for s in data.random_split(range(30), [20, 10])]
    assert a == b and sorted(a[0] + a[1]) == list(range(30))
    c = data.random_split(range(30), [20, 10], generator=np.random.default_rng(2))
    d = data.random_split(range(30), [20, 10], generator=np.random.default_rng(2))
    assert [list(s) for s in c] == [list(s) for s in d]


# ----------------------------------------------------------------------------- collate

Point = collections.namedtuple("Point", ["x", "y"])


def _same(ours, theirs):
    """Structure, types, dtypes and values of a collated batch agree with torch's."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, nn.Tensor), type(ours)
        assert ours.dtype == str(theirs.dtype).replace("torch.", "")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for key in theirs:
            _same(ours[key], theirs[key])
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
    else:
        assert ours == theirs


def _sample(i, framework):
    array = np.arange(6, dtype=np.float32).reshape(2, 3) + i
    tensor = framework.tensor([[1.0, 2.0], [3.0, 4.0]]) * i
    return {"image": tensor, "array": array, "label": i, "weight": 0.5 * i, "flag": i % 2 == 0,
            "name": f"s{i}", "np": np.int16(i), "pair": (i, [float(i), "t"]),
            "point": Point(np.float32(i), framework.tensor(i)),
            "nested": collections.OrderedDict(a=[i, i + 1])}


def test_default_collate_nested_like_torch():
    ours = data.default_collate([_sample(i, nn) for i in range(3)])
    theirs = tud.default_collate([_sample(i, torch) for i in range(3)])
    _same(ours, theirs)
    assert ours["image"].shape == (3, 2, 2) and ours["weight"].dtype == "float64"
    assert ours["flag"].dtype == "bool" and ours["name"] == ["s0", "s1", "s2"]


def test_default_convert_like_torch():
    sample = {"a": np.ones(3, dtype=np.int32), "b": (np.float64(2.0), "x"), "c": [1, 2]}
    _same(data.default_convert(sample), tud.default_convert(sample))
    array = np.zeros(2)
    assert np.shares_memory(data.default_convert(array).numpy(), array)


class Box:
    def __init__(self, value):
        self.value = value


def test_collate_with_a_custom_type_map():
    def collate_boxes(batch, *, collate_fn_map=None):
        return Box([b.value for b in batch])

    table = {**data.collate.default_collate_fn_map, Box: collate_boxes}
    out = data.collate.collate([(Box(1), 2.0), (Box(3), 4.0)], collate_fn_map=table)
    assert out[0].value == [1, 3] and out[1].tolist() == [2.0, 4.0]


def test_collate_keeps_autograd():
    rows = [nn.tensor([1.0, 2.0], requires_grad=True), nn.tensor([3.0, 4.0], requires_grad=True)]
    batch = data.default_collate(rows)
    assert batch.requires_grad and batch.grad_fn is not None
    batch.sum().backward()
    assert rows[0].grad.tolist() == [1.0, 1.0]


# ----------------------------------------------------------------------------- DataLoader

def test_dataloader_batches_and_len():
    ds = data.TensorDataset(nn.arange(10), nn.arange(10) * 2)
    loader = data.DataLoader(ds, batch_size=4)
    assert as_lists(loader) == [[[0, 1, 2, 3], [0, 2, 4, 6]], [[4, 5, 6, 7], [8, 10, 12, 14]],
                                [[8, 9], [16, 18]]]
    assert len(loader) == 3 == len(tud.DataLoader(range(10), batch_size=4))
    dropping = data.DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dropping) == 2 == len(list(dropping))
    assert len(data.DataLoader(ds)) == 10


def test_dataloader_shuffle_is_reproducible():
    ds = Squares(10)
    nn.manual_seed(4)
    a = [b[1].tolist() for b in data.DataLoader(ds, batch_size=3, shuffle=True)]
    nn.manual_seed(4)
    b = [b[1].tolist() for b in data.DataLoader(ds, batch_size=3, shuffle=True)]
    assert a == b and sorted(sum(a, [])) == [i * i for i in range(10)]
    g1, g2 = np.random.default_rng(9), np.random.default_rng(9)
    c = [b[1].tolist() for b in data.DataLoader(ds, batch_size=3, shuffle=True, generator=g1)]
    d = [b[1].tolist() for b in data.DataLoader(ds, batch_size=3, shuffle=True, generator=g2)]
    assert c == d


def test_dataloader_sampler_batch_sampler_and_no_batching():
    ds = Squares(6)
    by_sampler = data.DataLoader(ds, batch_size=2, sampler=[5, 4, 3, 2, 1, 0])
    assert [b[1].tolist() for b in by_sampler] == [[25, 16], [9, 4], [1, 0]]
    by_batches = data.DataLoader(ds, batch_sampler=[[0, 2], [4], [1, 3, 5]])
    assert [b[1].tolist() for b in by_batches] == [[0, 4], [16], [1, 9, 25]]
    assert len(by_batches) == 3
    single = list(data.DataLoader(ds, batch_size=None))     # default_convert, no stacking
    assert len(single) == 6 and single[2][0].tolist() == [2.0, -2.0] and single[2][1] == 4


def test_dataloader_iterable_dataset():
    loader = data.DataLoader(Counter(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    dropping = data.DataLoader(Counter(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dropping] == [[0, 1, 2], [3, 4, 5]] and len(dropping) == 2
    assert list(data.DataLoader(Counter(3), batch_size=None)) == [0, 1, 2]


def test_dataloader_fixed_attributes():
    loader = data.DataLoader(Squares(4))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                       "DataLoader is initialized"):
        loader.batch_size = 2


# ----------------------------------------------------------------------------- workers

class Failing(Squares):
    def __getitem__(self, i):
        if i == 5:
            raise KeyError(f"no sample {i} here")
        return super().__getitem__(i)


INITIALIZED = []           # what worker_init_fn recorded, in the worker's copy of this module


def record_init(worker_id):
    INITIALIZED.append(worker_id)


class Describing(Squares):
    """Samples say which worker made them, with what seed and init, and what nn.rand gives."""

    def __getitem__(self, i):
        info = data.get_worker_info()
        return (np.array([info.id, info.num_workers, i, info.seed % 1000, sum(INITIALIZED)]),
                nn.rand(1).item())


def test_workers_match_single_process_order():
    ds = Squares(23)
    nn.manual_seed(7)
    serial = as_lists(data.DataLoader(ds, batch_size=4, shuffle=True))
    nn.manual_seed(7)
    parallel = as_lists(data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2))
    assert parallel == serial and len(serial) == 6


class Computed(Squares):
    """Samples computed by compiled kernels, in the worker (after the parent ran them too)."""

    def __getitem__(self, i):
        return (nn.ones(3, 5) * float(i)).sum(0)


def test_workers_run_compiled_kernels():
    serial = [b.tolist() for b in data.DataLoader(Computed(6), batch_size=2)]
    parallel = [b.tolist() for b in data.DataLoader(Computed(6), batch_size=2, num_workers=2)]
    assert parallel == serial == [[[0.0] * 5, [3.0] * 5], [[6.0] * 5, [9.0] * 5],
                                  [[12.0] * 5, [15.0] * 5]]


def test_workers_iterable_dataset_and_info():
    got = [b.tolist() for b in data.DataLoader(Counter(9), batch_size=2, num_workers=2)]
    assert sorted(sum(got, [])) == list(range(9))
    assert got[:2] == [[0, 2], [1, 3]]          # round robin: worker 0, then worker 1
    assert data.get_worker_info() is None


def test_worker_info_seeds_and_init_fn():
    nn.manual_seed(0)
    loader = data.DataLoader(Describing(4), batch_size=1, num_workers=2,
                             worker_init_fn=record_init)
    batches = [(info.tolist()[0], rand.item()) for info, rand in loader]
    ids = [b[0][0] for b in batches]
    assert ids == [0, 1, 0, 1] and all(b[0][1] == 2 for b in batches)
    assert [b[0][4] for b in batches] == ids and INITIALIZED == []     # init_fn(id) ran there
    seeds = {b[0][0]: b[0][3] for b in batches}
    assert (seeds[1] - seeds[0]) % 1000 == 1                 # base seed + worker id
    assert len({b[1] for b in batches}) == 4                  # differently seeded workers
    nn.manual_seed(0)
    again = [(info.tolist()[0], rand.item()) for info, rand in
             data.DataLoader(Describing(4), batch_size=1, num_workers=2,
                             worker_init_fn=record_init)]
    assert again == batches                                   # the seeds follow nn.manual_seed


def test_worker_exception_carries_its_traceback():
    loader = data.DataLoader(Failing(8), batch_size=2, num_workers=2)
    with pytest.raises(KeyError) as error:
        list(loader)
    text = str(error.value)
    assert "Caught KeyError in DataLoader worker process 0" in text
    assert "Traceback (most recent call last)" in text and "no sample 5 here" in text
    assert "in __getitem__" in text


def test_early_break_shuts_workers_down():
    loader = data.DataLoader(Squares(40), batch_size=2, num_workers=2)
    iterator = iter(loader)
    next(iterator)
    workers = list(iterator._workers)
    start = time.monotonic()
    del iterator
    for worker in workers:
        worker.join(timeout=10)
    assert not any(w.is_alive() for w in workers) and time.monotonic() - start < 5
    for batch in loader:                        # the usual form: break out of a for loop
        break
    assert batch[1].tolist() == [0, 1]


def test_persistent_workers_two_epochs():
    loader = data.DataLoader(Counter(5), batch_size=2, num_workers=2, persistent_workers=True)
    first = sorted(sum((b.tolist() for b in loader), []))
    iterator = loader._iterator
    for _ in loader:
        break                                   # an epoch left early does not leak results
    second = sorted(sum((b.tolist() for b in loader), []))
    assert first == second == list(range(5)) and loader._iterator is iterator
    workers = iterator._workers
    del loader, iterator
    for worker in workers:
        worker.join(timeout=10)
    assert not any(w.is_alive() for w in workers)


class Dying(Squares):
    def __getitem__(self, i):
        if i == 3:
            os._exit(1)
        return super().__getitem__(i)


def test_dead_worker_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+.*\) exited "
                       "unexpectedly"):
        list(data.DataLoader(Dying(6), batch_size=1, num_workers=2))


# ----------------------------------------------------------------------------- digits

DIGIT_0 = [[0, 0, 5, 13, 9, 1, 0, 0], [0, 0, 13, 15, 10, 15, 5, 0], [0, 3, 15, 2, 0, 11, 8, 0],
           [0, 4, 12, 0, 0, 8, 8, 0], [0, 5, 8, 0, 0, 9, 8, 0], [0, 4, 11, 0, 1, 12, 7, 0],
           [0, 2, 14, 5, 10, 12, 0, 0], [0, 0, 6, 13, 10, 0, 0, 0]]


def test_load_digits():
    images, labels = datasets.load_digits(image_size=32)
    assert images.shape == (1797, 1, 32, 32) and images.dtype == "float32"
    assert labels.shape == (1797,) and labels.dtype == "int64"
    pixels = images.numpy()
    assert pixels.min() == 0.0 and pixels.max() == 1.0
    assert sorted(set(labels.tolist())) == list(range(10))
    np.testing.assert_array_equal(np.bincount(labels.numpy())[:3], [178, 182, 177])
    small, _ = datasets.load_digits(image_size=8)           # scikit-learn's first image
    np.testing.assert_allclose(small.numpy()[0, 0] * 16, DIGIT_0, atol=1e-5)
    assert labels[0].item() == 0 and labels[1].item() == 1
    ds = datasets.DigitsDataset(image_size=16)
    image, label = ds[10]
    assert len(ds) == 1797 and image.shape == (1, 16, 16) and label.item() == 0


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_resize_images_like_interpolate(mode):
    images = np.random.default_rng(0).random((2, 3, 7, 9))
    ours = datasets.resize_images(images, (12, 5), mode)
    extra = {"align_corners": False} if mode == "bilinear" else {}
    theirs = torch.nn.functional.interpolate(torch.tensor(images), size=(12, 5), mode=mode,
                                             **extra)
    np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-12)
