"""``HistogramObserver``, as PyTorch's: a running histogram of the observed values (2048 bins
over the running min/max; when the range grows, the old histogram is spread over the new bins
at 16 sub-bins per bin), and ``calculate_qparams`` picks the min/max that approximately
minimize the L2 quantization error (caffe2's ``NonlinearQuantizationParamsSearch``): it drops
bins from the side that holds less mass, 1e-5 of the total at a time, while the error falls.

The arithmetic follows PyTorch's tensor operations in float32 (python floats where PyTorch
uses ``.item()``), so the chosen bins, hence the parameters, are PyTorch's.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..quantized.dtypes import per_tensor_affine, quint8
from .observer import (F32_EPS, UniformQuantizationObserverBase, _f32, _host,
                       _is_per_tensor, _np)

__all__ = ["HistogramObserver", "histc", "torch_sum", "default_histogram_observer"]

_F32 = np.float32


def histc(x: np.ndarray, bins: int, lo, hi) -> np.ndarray:
    """``torch.histc(x, bins, min=lo, max=hi)`` (float32): bin ``int((x - lo) * bins /
    (hi - lo))`` in float32, the last bin closed; values outside ``[lo, hi]`` are dropped;
    ``lo == hi`` widens the range to ``[lo - 1, hi + 1]``."""
    lo, hi = _F32(lo), _F32(hi)
    if lo == hi:
        lo, hi = lo - _F32(1), hi + _F32(1)
    x = x.reshape(-1)
    x = x[(x >= lo) & (x <= hi)]
    pos = ((x - lo) * _F32(bins) / (hi - lo)).astype(np.int64)
    pos[pos == bins] = bins - 1
    return np.bincount(pos, minlength=bins).astype(np.float32)


def _linspace(start, end, steps) -> np.ndarray:
    """``torch.linspace`` in float32 as PyTorch's CPU kernel computes it: ``step = (end -
    start) / (steps - 1)``, then ``fma(step, i, start)`` for the first half and ``fma(-step,
    steps - 1 - i, end)`` for the second (one rounding each: the product is exact in float64)."""
    start, end = _F32(start), _F32(end)
    step = np.float64((end - start) / _F32(steps - 1))
    i = np.arange(steps)
    half = steps // 2
    first = np.float64(start) + step * i[:half]
    second = np.float64(end) - step * (steps - 1 - i[half:])
    return np.concatenate([first, second]).astype(np.float32)


def torch_sum(a: np.ndarray, lanes: int = 8) -> float:
    """``torch.sum`` of a contiguous float32 vector as PyTorch's CPU kernel adds it (its
    ``cascade_sum``): ``lanes``-wide vectors (8, as PyTorch 2.13's x86 builds sum, AVX-512
    hosts included) taken 4 at a time, summed in blocks of 16 rows that cascade into higher
    levels, the 4 partial vectors added, then the scalar tail and the lanes one by one.
    Float32 sums depend on this order; the histogram's total and its error sums must match
    PyTorch's to choose the same bins (large calibrations have fractional bin counts)."""
    a = np.asarray(a, np.float32).reshape(-1)
    n_vec = a.size // lanes
    vecs = a[:n_vec * lanes].reshape(n_vec, lanes)
    n_rows = n_vec // 4
    rows = vecs[:n_rows * 4].reshape(n_rows, 4, lanes)
    power = max(4, int(np.ceil(np.log2(n_rows))) // 4 if n_rows > 1 else 4)
    step, acc = 1 << power, np.zeros((4, 4, lanes), np.float32)
    i = 0
    while i + step <= n_rows:
        for _ in range(step):
            acc[0] += rows[i]
            i += 1
        for level in range(1, 4):
            acc[level] += acc[level - 1]
            acc[level - 1] = 0
            if i & ((step - 1) << (level * power)):
                break
    for i in range(i, n_rows):
        acc[0] += rows[i]
    for level in range(1, 4):
        acc[0] += acc[level]
    partial = acc[0]
    for i in range(n_rows * 4, n_vec):
        partial[0] += vecs[i]
    total = partial[0] + partial[1] + partial[2] + partial[3]
    out = np.float32(0)
    for v in a[n_vec * lanes:]:
        out = out + v
    for v in total:
        out = out + v
    return float(out)


def _norm(delta_begin, delta_end, density):
    """``density * (end**3 - begin**3) / 3`` in float32, as PyTorch's ``_get_norm``."""
    e, b = _F32(delta_end) if np.ndim(delta_end) == 0 else delta_end, delta_begin
    b = _F32(b) if np.ndim(b) == 0 else b
    return density * ((e * e * e - b * b * b) / _F32(3))


class HistogramObserver(UniformQuantizationObserverBase):
    """A histogram of the observed values; parameters from the L2-optimal min/max."""

    def __init__(self, bins=2048, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=F32_EPS,
                 is_dynamic=False, **kwargs):
        if not _is_per_tensor(qscheme):
            raise NotImplementedError("HistogramObserver's qscheme only support "
                                      "nn.per_tensor_symmetric and nn.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)
        self.bins = bins
        self.register_buffer("histogram", _f32(np.zeros(bins)))
        self.register_buffer("min_val", _f32(np.inf))
        self.register_buffer("max_val", _f32(-np.inf))
        self.dst_nbins = 2 ** (8 * self.dtype.itemsize)
        self.upsample_rate = 16

    # --------------------------------------------------------------- recording

    def forward(self, x_orig):
        x = _host(x_orig, "HistogramObserver")
        if x.size == 0:
            return x_orig
        x = x.reshape(-1)
        x_min, x_max = x.min(), x.max()
        if x_min == -np.inf or x_max == np.inf:
            warnings.warn("inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[np.abs(x) != np.inf]
            if x.size == 0:
                return x_orig
            x_min, x_max = x.min(), x.max()
        cur_min, cur_max = _np(self.min_val)[()], _np(self.max_val)[()]
        if cur_min == np.inf or cur_max == -np.inf:
            self.min_val, self.max_val = _f32(x_min), _f32(x_max)
            self.histogram = _f32(histc(x, self.bins, x_min, x_max))
            return x_orig
        new_min, new_max = min(cur_min, x_min), max(cur_max, x_max)
        update = histc(x, self.bins, new_min, new_max)
        hist = _np(self.histogram)
        if new_min == cur_min and new_max == cur_max:
            self.histogram = _f32(hist + update)
        else:
            self.histogram = _f32(self._combine(hist, cur_min, cur_max, update, new_min,
                                                new_max))
            self.min_val, self.max_val = _f32(new_min), _f32(new_max)
        return x_orig

    def _combine(self, hist, orig_min, orig_max, update, new_min, new_max):
        if orig_min == orig_max:
            return histc(np.array([orig_min], np.float32), self.bins, new_min,
                         new_max) * hist.sum(dtype=np.float32) + update
        return update + self._upscale(hist, orig_min, orig_max, new_min, new_max)

    def _upscale(self, hist, orig_min, orig_max, new_min, new_max):
        """The old histogram spread over the new bins: each of its bins split in
        ``upsample_rate`` equal parts, each part going to the new bin of its midpoint."""
        rate, bins = self.upsample_rate, self.bins
        fine = np.repeat(hist, rate) / _F32(rate)
        bin_size = (_F32(orig_max) - _F32(orig_min)) / _F32(bins * rate)
        mids = _linspace(orig_min, orig_max, bins * rate + 1)[:-1] + _F32(0.5) * bin_size
        edges = _linspace(new_min, new_max, bins + 1)
        which = np.clip(np.searchsorted(edges, mids, side="right") - 1, 0, bins - 1)
        out = np.zeros(bins, np.float32)
        np.add.at(out, which, fine)         # in order, in float32, as torch.bincount
        return out

    def reset_histogram(self, x, min_val, max_val):
        self.min_val, self.max_val = _f32(min_val), _f32(max_val)
        self.histogram = _f32(histc(_host(x, "reset_histogram"), self.bins, min_val, max_val))

    # --------------------------------------------------------------- the search

    def _quantization_error(self, start_bin, end_bin):
        """The L2 error of quantizing the histogram to ``dst_nbins`` levels over bins
        ``start_bin..end_bin`` (PyTorch's ``_compute_quantization_error``)."""
        bins = self.bins
        bin_width = (float(self.max_val.item()) - float(self.min_val.item())) / bins
        dst_width = bin_width * (end_bin - start_bin + 1) / self.dst_nbins
        if dst_width == 0.0:
            return 0.0
        bw, dw = _F32(bin_width), _F32(dst_width)
        src_begin = (np.arange(bins) - start_bin).astype(np.float32) * bw
        src_end = src_begin + bw
        top = _F32(self.dst_nbins - 1)
        dst_of_begin = np.clip(np.floor_divide(src_begin, dw), _F32(0), top)
        dst_of_begin_center = (dst_of_begin + _F32(0.5)) * dw
        dst_of_end = np.clip(np.floor_divide(src_end, dw), _F32(0), top)
        density = _np(self.histogram) / bw
        norm = np.zeros(bins, np.float32)
        norm += _norm(src_begin - dst_of_begin_center,
                      np.ones(bins, np.float32) * _F32(dst_width / 2), density)
        norm += (dst_of_end - dst_of_begin - _F32(1)) * _norm(
            _F32(-dst_width / 2), _F32(dst_width / 2), density)
        dst_of_end_center = dst_of_end * dw + _F32(dst_width / 2)
        norm += _norm(_F32(-dst_width / 2), src_end - dst_of_end_center, density)
        return torch_sum(norm)

    def _non_linear_param_search(self):
        """The (min, max) of the least-error range of bins (float32 scalars)."""
        if self.histogram.shape[0] != self.bins:
            raise AssertionError("bins mismatch")
        hist = _np(self.histogram)
        min_val, max_val = _np(self.min_val)[()], _np(self.max_val)[()]
        bin_width = (max_val - min_val) / _F32(self.bins)
        total = torch_sum(hist)
        csum = np.cumsum(hist, dtype=np.float64).astype(np.float32)   # PyTorch: double sums
        stepsize, alpha, beta = 1e-5, 0.0, 1.0
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            lo_bound, hi_bound = _F32(next_alpha * total), _F32(next_beta * total)
            left, right = start_bin, end_bin
            while left < end_bin and csum[left] < lo_bound:
                left += 1
            while right > start_bin and csum[right] > hi_bound:
                right -= 1
            next_start, next_end = start_bin, end_bin
            if (left - start_bin) > (end_bin - right):
                next_start, alpha = left, next_alpha
            else:
                next_end, beta = right, next_beta
            if next_start == start_bin and next_end == end_bin:
                continue
            norm = self._quantization_error(next_start, next_end)
            if norm > norm_min:
                break
            norm_min, start_bin, end_bin = norm, next_start, next_end
        new_min = min_val + bin_width * _F32(start_bin)
        new_max = min_val + bin_width * _F32(end_bin + 1)
        return _F32(new_min), _F32(new_max)

    def calculate_qparams(self):
        if self.min_val.item() == np.inf and self.max_val.item() == -np.inf:
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default scale and zero point ", stacklevel=2)
            return _f32([1.0]), _f32(np.zeros(1)).long()
        if self.bins != self.histogram.shape[0]:
            raise AssertionError("The number of bins in histogram should be equal to the "
                                 "number of bins supplied while making this observer")
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(new_min, new_max)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
