"""Sparse 3-D convolution, spconv's way: a small voxel network on synthetic point clouds.

LiDAR scans and CAD surfaces occupy a few percent of a voxel grid. A dense Conv3d spends
almost all of its work on empty cells; a sparse convolution (spconv, the library behind most
LiDAR 3-D detectors) keeps only the active voxels and computes, for each kernel offset, a
gather -> GEMM -> scatter-add over the pairs of sites it connects: the **rulebook**.

    1. point clouds on random surfaces (spheres and boxes), voxelized to 1-5% occupancy
    2. the rulebook of a submanifold 3x3x3 convolution: pairs per kernel offset
    3. the loop nest of the gather-GEMM kernel (te), one kernel offset per tile of pairs
    4. y.dense() of sparse layers checked against a dense nn.Conv3d on the densified input
    5. a voxel network (SubMConv3d / SparseConv3d / BatchNorm1d / ReLU / global pooling)
       trained for a few steps to tell spheres from boxes
"""
import os
import time

import numpy as np

import nn
import nn.optim
import nn.spconv as spconv
import te
from nn.ops import spconv as spconv_ops
from nn.ops.spconv_schedule import schedule_gather_gemm

small = os.environ.get("TW_TUTORIAL_SMALL") == "1"
G = 24 if small else 48                         # grid side
rng = np.random.default_rng(0)


# 1. Point clouds: points on a sphere or on the faces of a box, voxelized.
def cloud(kind):
    """(M, 3) int voxels of one surface, with a random centre and size."""
    centre = rng.uniform(0.35, 0.65, 3) * G
    size = rng.uniform(0.15, 0.3) * G
    p = rng.standard_normal((6 * G * G, 3))
    if kind == 0:                                # sphere
        p = centre + size * p / np.linalg.norm(p, axis=1, keepdims=True)
    else:                                        # box: one coordinate pushed to a face
        p = rng.uniform(-1, 1, (6 * G * G, 3))
        face = rng.integers(0, 3, len(p))
        p[np.arange(len(p)), face] = np.sign(p[np.arange(len(p)), face])
        p = centre + size * p
    return np.unique(np.clip(p.astype(np.int64), 0, G - 1), axis=0)


def batch(n):
    """A SparseConvTensor of ``n`` clouds (features: the centred coordinates and 1) and their
    labels (0 sphere, 1 box)."""
    labels = rng.integers(0, 2, n)
    idx, feats = [], []
    for b, kind in enumerate(labels):
        v = cloud(kind)
        idx.append(np.concatenate([np.full((len(v), 1), b), v], 1))
        feats.append(np.concatenate([v / G - 0.5, np.ones((len(v), 1))], 1))
    idx = np.concatenate(idx).astype(np.int32)
    x = spconv.SparseConvTensor(nn.tensor(np.concatenate(feats).astype("float32")), idx,
                                [G, G, G], n)
    return x, labels


x, labels = batch(4)
occupancy = x.indices.shape[0] / (x.batch_size * G ** 3)
print(f"4 clouds on a {G}^3 grid: {x.indices.shape[0]} active voxels, occupancy "
      f"{occupancy:.1%}")
assert 0.005 < occupancy < 0.06

# 2. The rulebook of a submanifold 3x3x3 convolution: the outputs are the input sites; for
#    each of the 27 offsets, the pairs (input, output) with input = output + offset - 1.
book, _ = spconv.build_rulebook(x.indices, x.batch_size, x.spatial_shape, [3] * 3,
                                [1] * 3, [1] * 3, [1] * 3, subm=True)
pair_offset = np.repeat(book.tile_offset, spconv_ops.ROWS)      # padding pairs are -1
real = np.bincount(pair_offset[book.pair_in >= 0], minlength=27)
print(f"rulebook: {book.num_pairs} pairs ({book.num_pairs / x.indices.shape[0]:.1f} per site;"
      f" a dense 3x3x3 convolution would touch 27 per cell), built in "
      f"{book.seconds * 1e3:.1f} ms")
print("pairs per offset (z, y, x in -1..1):", real.tolist())
assert real[13] == x.indices.shape[0]           # the centre offset pairs every site with itself

# 3. The gather-GEMM kernel: each tile of ROWS pairs shares one offset, so its accumulators
#    (ROWS x 32 output channels) stay in registers while the input channels stream by; the
#    gathered rows x[gather[t, r], c] are loaded inside the product.
T, N = te.var("T"), te.var("N")
X = te.placeholder((N, 8), name="x")
W = te.placeholder((16, 27, 8), name="weight")
gather = te.placeholder((T, spconv_ops.ROWS), "int32", name="gather")
offset = te.placeholder((T,), "int32", name="offset")
out = spconv_ops.gather_gemm(X, W, gather, offset)
print(te.lower(schedule_gather_gemm(out), [X, W, gather, offset, out]))


# 4. Sparse layers vs a dense Conv3d on the densified input: equal at the active output sites
#    (nn.Conv3d's weight is (out, in, kz, ky, kx); spconv's (out, kz, ky, kx, in)).
def dense_conv(layer, dense_in, padding, stride):
    conv = nn.Conv3d(layer.in_channels, layer.out_channels, 3, stride=stride, padding=padding,
                     bias=False)
    conv.weight.data = nn.tensor(np.ascontiguousarray(
        layer.weight.detach().numpy().transpose(0, 4, 1, 2, 3)))
    return conv(dense_in).detach().numpy()


with nn.no_grad():
    for layer, pad, stride in ((spconv.SubMConv3d(4, 8, 3, padding=1, bias=False), 1, 1),
                               (spconv.SparseConv3d(4, 8, 3, stride=2, padding=1,
                                                    bias=False), 1, 2)):
        y = layer(x)
        got = y.dense().numpy()
        want = dense_conv(layer, x.dense(), pad, stride)
        mask = np.zeros(got.shape[:1] + got.shape[2:], bool)
        mask[tuple(y.indices.T)] = True
        err = np.abs(got - want)[np.broadcast_to(mask[:, None], got.shape)].max()
        print(f"{type(layer).__name__}: {y.indices.shape[0]} output sites on "
              f"{y.spatial_shape}, max |sparse - dense Conv3d| at them {err:.1e}")
        assert err < 1e-4
        if layer.subm:       # away from the active sites the submanifold output is empty
            np.testing.assert_array_equal(got[~np.broadcast_to(mask[:, None], got.shape)], 0)

# 5. A voxel classifier, trained for a few steps.
nn.manual_seed(0)
net = spconv.SparseSequential(
    spconv.SubMConv3d(4, 16, 3, padding=1, bias=False, indice_key="subm1"),
    nn.BatchNorm1d(16), nn.ReLU(),
    spconv.SubMConv3d(16, 16, 3, padding=1, bias=False, indice_key="subm1"),
    nn.BatchNorm1d(16), nn.ReLU(),
    spconv.SparseConv3d(16, 32, 3, stride=2, padding=1, bias=False, indice_key="down1"),
    nn.BatchNorm1d(32), nn.ReLU(),
    spconv.SubMConv3d(32, 32, 3, padding=1, bias=False, indice_key="subm2"),
    nn.BatchNorm1d(32), nn.ReLU(),
    spconv.SparseGlobalMaxPool(),
)
head = nn.Linear(32, 2)
opt = nn.optim.Adam(list(net.parameters()) + list(head.parameters()), lr=0.01)
steps = 6 if small else 20
losses = []
start = time.perf_counter()
for step in range(steps):
    xb, yb = batch(4)
    loss = nn.functional.cross_entropy(head(net(xb)), nn.tensor(yb))
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(float(loss.item()))
    print(f"step {step}: loss {losses[-1]:.3f}")
print(f"{steps} steps in {time.perf_counter() - start:.1f} s (the first ones compile)")
assert np.isfinite(losses).all()
assert min(losses[-3:]) < losses[0], "training did not lower the loss"
