"""What the nn.spconv tests share: random sites, and one check of a layer against a dense
torch convolution on the densified input and against spconv 2.x (CPU) on the same weights:
outputs at the active sites, the output index sets, feature / weight / bias gradients."""
from __future__ import annotations

import numpy as np
import torch

import nn
import nn.spconv as sp

spt = None


def spconv_ref():
    """spconv.pytorch (``run_spconv`` runs it on one thread: its CPU build's scatter-add is not
    race-free on more). spconv 2.3.8's backward asks torch for the current CUDA stream even
    on the CPU, which a CPU-only torch refuses; the stream is unused there, so it gets 0."""
    global spt
    if spt is None:
        import spconv.pytorch as module
        from spconv.pytorch import cppcore, ops
        if not torch.cuda.is_available():
            for m in (cppcore, ops):
                if hasattr(m, "get_current_stream"):
                    m.get_current_stream = lambda: 0
        spt = module
    return spt


def random_sites(rng, batch_size, shape, n, empty_items=()):
    """(n, 1 + ndim) int32 distinct sites; the batch items ``empty_items`` get none."""
    items = [b for b in range(batch_size) if b not in empty_items]
    cells = int(np.prod(shape))
    n = min(n, cells * len(items))
    lin = rng.choice(cells * len(items), n, replace=False)
    item, rest = np.divmod(lin, cells)
    coords = np.stack(np.unravel_index(rest, shape), 1)
    return np.concatenate([np.array(items)[item][:, None], coords], 1).astype(np.int32)


def sorted_rows(indices):
    idx = np.asarray(indices)
    return idx[np.lexsort(idx.T[::-1])] if idx.size else idx.reshape(0, idx.shape[-1])


def run_ours(layers, idx, feats, shape, batch_size, grad_dense):
    """Output tensor and the gradients of sum(y.dense() * grad_dense)."""
    x = sp.SparseConvTensor(nn.tensor(feats, requires_grad=True), idx, shape, batch_size)
    y = x
    for layer in layers:
        y = layer(y)
    dense = y.dense()
    (dense * nn.tensor(grad_dense)).sum().backward()
    return x, y, dense.detach().numpy()


def run_spconv(layers, idx, feats, shape, batch_size, grad_dense):
    ref = spconv_ref()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        f = torch.tensor(feats, requires_grad=True)
        x = ref.SparseConvTensor(f, torch.from_numpy(idx), shape, batch_size)
        y = x
        for layer in layers:
            y = layer(y)
        dense = y.dense()
        (dense * torch.from_numpy(grad_dense)).sum().backward()
    finally:
        torch.set_num_threads(threads)
    return f, y, dense.detach().numpy()


def port(ours, theirs):
    """Copy our layer's parameters into spconv's layer (same layout and names)."""
    state = {k: torch.from_numpy(v.detach().numpy().copy())
             for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state)
    return theirs


def check_close(got, want, what, tol=2e-4):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    err = float(np.abs(got - want).max()) if got.size else 0.0
    assert err <= tol * scale, f"{what}: max |diff| {err} (scale {scale})"
