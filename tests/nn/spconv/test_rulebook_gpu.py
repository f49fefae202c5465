"""Rulebooks built on the GPU (nn/spconv/rulebook_gpu.py, numba's simulator in the suite) are
the host's rulebooks: the same pairs in the same order, the same output sites, the same index
tables, for submanifold, strided, dilated, transposed, 2-D and pooling rulebooks, with empty
batch items and no sites at all; cuda layers use them; bad sites raise the host's errors."""
import numpy as np
import pytest

import nn
import nn.spconv as sp
from nn.device import host
from nn.spconv.rulebook import build_rulebook
from nn.spconv.rulebook_gpu import GpuRulebook, _empty, build_rulebook_gpu
from spconv_compare import random_sites

TABLES = ("pair_in", "pair_out", "tile_offset", "gather_in", "gather_out", "slots_out",
          "slots_in")


def same_book(gpu, cpu):
    assert isinstance(gpu, GpuRulebook)
    assert (gpu.kv, gpu.n_in, gpu.n_out, gpu.num_pairs) == \
        (cpu.kv, cpu.n_in, cpu.n_out, cpu.num_pairs)
    for name in TABLES:
        a, b = host(getattr(gpu, name)), getattr(cpu, name)
        assert a.shape == b.shape and np.array_equal(a, b), name
    for a, b in zip(gpu.chunk_groups, cpu.chunk_groups):
        assert np.array_equal(host(a), b)
    np.testing.assert_array_equal(gpu.chunk_counts, cpu.chunk_counts)
    if cpu.out_indices is not None:
        assert gpu.out_indices.dtype == cpu.out_indices.dtype
        np.testing.assert_array_equal(gpu.out_indices, cpu.out_indices)
    assert gpu.seconds > 0


CASES = [  # shape, batch, sites, empty items, ksize, stride, padding, dilation, subm, transposed
    ([6, 5, 7], 2, 40, (), [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1], True, False),
    ([6, 5, 7], 3, 30, (1,), [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], False, False),
    ([7, 6, 5], 1, 25, (), [3, 1, 3], [1, 2, 1], [0, 1, 2], [2, 1, 2], False, False),
    ([7, 6, 5], 2, 30, (), [5, 3, 3], [1, 1, 1], [0, 0, 0], [1, 2, 1], True, False),
    ([4, 5, 3], 2, 20, (), [3, 2, 3], [2, 2, 1], [1, 0, 1], [1, 1, 1], False, True),
    ([9, 8], 2, 30, (0,), [3, 3], [2, 2], [1, 1], [1, 1], False, False),
    ([9, 8], 1, 25, (), [3, 3], [1, 1], [1, 1], [1, 1], True, False),
    ([6, 6, 6], 2, 30, (), [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False, False),  # pool
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_gpu_rulebook_is_the_host_rulebook(case):
    shape, batch, n, empty, ks, st, pd, dl, subm, tr = CASES[case]
    idx = random_sites(np.random.default_rng(case), batch, shape, n, empty)
    args = (idx, batch, shape, ks, st, pd, dl)
    cpu, cpu_shape = build_rulebook(*args, subm=subm, transposed=tr)
    gpu, gpu_shape = build_rulebook_gpu(*args, subm=subm, transposed=tr)
    assert gpu_shape == cpu_shape
    same_book(gpu, cpu)
    same_book(gpu.reversed(), cpu.reversed())


@pytest.mark.parametrize("subm", [True, False])
def test_gpu_rulebook_without_sites(subm):
    idx = np.zeros((0, 4), np.int32)
    args = (idx, 2, [5, 5, 5], [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1])
    cpu, _ = build_rulebook(*args, subm=subm)
    gpu, _ = build_rulebook_gpu(*args, subm=subm)
    same_book(gpu, cpu)


def test_cuda_layers_build_their_rulebooks_on_the_gpu():
    idx = random_sites(np.random.default_rng(3), 2, [5, 6, 4], 24)
    feats = np.random.default_rng(4).standard_normal((idx.shape[0], 2)).astype("float32")
    x = sp.SparseConvTensor(nn.tensor(feats, device="cuda"), idx, [5, 6, 4], 2)
    y = sp.SparseConv3d(2, 3, 3, stride=2, padding=1, indice_key="d")(x)
    assert isinstance(y.indice_dict["d"].book, GpuRulebook)
    assert isinstance(y.indices, np.ndarray)
    cpu = sp.SparseConvTensor(nn.tensor(feats), idx, [5, 6, 4], 2)
    assert not isinstance(sp.SparseConv3d(2, 3, 3, indice_key="d")(cpu).indice_dict["d"].book,
                          GpuRulebook)


def test_device_fill():
    for dtype, value in ((np.int32, -1), (np.int64, np.iinfo(np.int64).max)):
        a = _empty((5, 3), dtype, value, kernel=True)
        np.testing.assert_array_equal(host(a), np.full((5, 3), value, dtype))


@pytest.mark.parametrize("bad", ["duplicate", "range", "batch"])
def test_gpu_rulebook_bad_sites_raise_the_host_error(bad):
    idx = random_sites(np.random.default_rng(5), 2, [5, 5, 5], 12)
    if bad == "duplicate":
        idx[7] = idx[2]
    elif bad == "range":
        idx[4, 2] = 5
    else:
        idx[3, 0] = 2
    args = (idx, 2, [5, 5, 5], [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1])
    with pytest.raises(ValueError) as host_error:
        build_rulebook(*args, subm=True)
    with pytest.raises(ValueError) as gpu_error:
        build_rulebook_gpu(*args, subm=True)
    assert str(gpu_error.value) == str(host_error.value)
