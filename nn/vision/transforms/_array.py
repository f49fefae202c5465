"""The transforms' arithmetic on numpy images ``(..., C, H, W)`` (uint8 or float), following
torchvision's tensor kernels step for step (float32 arithmetic, the same rounding and casts), so
that a tensor or numpy image transformed here equals torchvision's result on the same tensor."""
from __future__ import annotations

import math

import numpy as np

from ...datasets import _interpolation_matrix

__all__ = ["resize", "crop", "pad", "rotate", "affine", "rgb_to_grayscale", "adjust_brightness",
           "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_sharpness",
           "posterize", "solarize", "autocontrast", "equalize", "invert", "erase",
           "inverse_affine_matrix", "affine_output_size"]


def _is_int(a):
    return not np.issubdtype(a.dtype, np.floating)


def _bound(a):
    return 255.0 if a.dtype == np.uint8 else (float(np.iinfo(a.dtype).max) if _is_int(a)
                                              else 1.0)


def _cast_out(out, dtype):
    """A float result back to ``dtype``: rounded (half to even, as torch.round) for integers."""
    if np.issubdtype(dtype, np.floating):
        return out.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.round(out), info.min, info.max).astype(dtype)


# ----------------------------------------------------------------------------- resize

def _aa_weights(n_in, n_out, kind):
    """PIL's / torch's antialiased resampling matrix ``(n_out, n_in)``: a filter of support
    ``support * max(scale, 1)`` around each output centre, weights normalized to sum 1."""
    scale = n_in / n_out
    support_scale = max(scale, 1.0)
    if kind == "bilinear":
        support = 1.0

        def filt(x):
            x = np.abs(x)
            return np.where(x < 1.0, 1.0 - x, 0.0)
    else:
        support, a = 2.0, -0.5

        def filt(x):
            x = np.abs(x)
            return np.where(x < 1.0, ((a + 2) * x - (a + 3)) * x * x + 1,
                            np.where(x < 2.0, (((x - 5) * x + 8) * x - 4) * a, 0.0))
    support *= support_scale
    matrix = np.zeros((n_out, n_in))
    for i in range(n_out):
        centre = (i + 0.5) * scale
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), n_in)
        w = filt((np.arange(lo, hi) - centre + 0.5) / support_scale)
        total = w.sum()
        matrix[i, lo:hi] = w / total if total != 0 else w
    return matrix


def _plain_weights(n_in, n_out, kind):
    """torch's ``interpolate`` without antialias (align_corners=False): bilinear, bicubic
    (a = -0.75, clamped borders), nearest (``floor(i * scale)``) or nearest-exact."""
    if kind in ("bilinear", "nearest"):
        return _interpolation_matrix(n_in, n_out, kind)
    scale = n_in / n_out
    rows = np.arange(n_out)
    matrix = np.zeros((n_out, n_in))
    if kind == "nearest-exact":
        src = np.floor((rows + 0.5) * scale)
        matrix[rows, np.minimum(src.astype(int), n_in - 1)] = 1.0
        return matrix
    src = (rows + 0.5) * scale - 0.5
    a = -0.75
    base = np.floor(src).astype(int)
    t = src - base
    coeffs = [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
              ((a + 2) * t - (a + 3)) * t * t + 1,
              ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1]
    coeffs.append(1.0 - coeffs[0] - coeffs[1] - coeffs[2])
    for k, c in enumerate(coeffs):
        np.add.at(matrix, (rows, np.clip(base - 1 + k, 0, n_in - 1)), c)
    return matrix


def resize(a, size, interpolation="bilinear", antialias=True):
    """``a`` resampled to ``size`` = (h, w): torchvision's tensor resize."""
    h, w = a.shape[-2:]
    oh, ow = size
    if (oh, ow) == (h, w):
        return a.copy()
    kind = interpolation
    if kind in ("nearest", "nearest-exact") or not antialias:
        rows, cols = _plain_weights(h, oh, kind), _plain_weights(w, ow, kind)
    else:
        rows, cols = _aa_weights(h, oh, kind), _aa_weights(w, ow, kind)
    if kind in ("nearest", "nearest-exact"):         # a gather: keeps the dtype exactly
        return a[..., rows.argmax(1), :][..., cols.argmax(1)]
    out = np.matmul(np.matmul(rows, a.astype(np.float64)), cols.T)
    if _is_int(a) and kind == "bicubic":
        out = np.clip(out, 0, _bound(a))
    return _cast_out(out, a.dtype)


# ----------------------------------------------------------------------------- geometry

def crop(a, top, left, height, width):
    """torchvision's crop: the window may reach outside the image, which is zero-padded."""
    h, w = a.shape[-2:]
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        pads = [(0, 0)] * (a.ndim - 2) + [(max(-top, 0), max(bottom - h, 0)),
                                          (max(-left, 0), max(right - w, 0))]
        a = np.pad(a[..., max(top, 0):max(bottom, 0), max(left, 0):max(right, 0)], pads)
        return np.ascontiguousarray(a)
    return np.ascontiguousarray(a[..., top:bottom, left:right])


_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect",
              "symmetric": "symmetric"}


def pad(a, padding, fill=0, padding_mode="constant"):
    """``padding`` = (left, top, right, bottom); negative values crop."""
    left, top, right, bottom = padding
    if min(padding) < 0:
        h, w = a.shape[-2:]
        a = a[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
        left, top, right, bottom = (max(p, 0) for p in padding)
    widths = [(0, 0)] * (a.ndim - 2) + [(top, bottom), (left, right)]
    if padding_mode == "constant":
        return np.pad(a, widths, mode="constant", constant_values=fill)
    return np.pad(a, widths, mode=_PAD_MODES[padding_mode])


def inverse_affine_matrix(center, angle, translate, scale, shear):
    """torchvision's ``_get_inverse_affine_matrix`` (inverted): output pixel -> input pixel."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
    m[2] += cx
    m[5] += cy
    return m


def affine_output_size(matrix, w, h):
    """The (w, h) that holds the whole transformed image (``rotate(expand=True)``)."""
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0],
                    [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]], np.float32)
    theta = np.array(matrix, np.float32).reshape(2, 3)
    new = pts @ theta.T
    lo = new.min(0) + np.array([w * 0.5, h * 0.5], np.float32)
    hi = new.max(0) + np.array([w * 0.5, h * 0.5], np.float32)
    tol = np.float32(1e-4)
    cmax = np.ceil(np.trunc(hi / tol) * tol)
    cmin = np.floor(np.trunc(lo / tol) * tol)
    size = cmax - cmin
    return int(size[0]), int(size[1])


def _grid_transform(a, matrix, out_w, out_h, interpolation, fill):
    """torchvision's ``_gen_affine_grid`` + ``grid_sample(align_corners=False, zeros)`` with its
    fill-by-mask step."""
    h, w = a.shape[-2:]
    dtype = a.dtype if not _is_int(a) else np.float32
    theta = np.array(matrix, dtype).reshape(2, 3)
    xs = np.linspace(-out_w * 0.5 + 0.5, out_w * 0.5 + 0.5 - 1, out_w, dtype=dtype)
    ys = np.linspace(-out_h * 0.5 + 0.5, out_h * 0.5 + 0.5 - 1, out_h, dtype=dtype)
    base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], np.ones((1, 1), dtype)), -1)
    rescaled = theta.T / np.array([0.5 * w, 0.5 * h], dtype)
    grid = base.reshape(-1, 3) @ rescaled                       # (oh*ow, 2), in [-1, 1]
    ix = ((grid[:, 0] + 1) * w - 1) / 2
    iy = ((grid[:, 1] + 1) * h - 1) / 2
    src = a.astype(dtype)
    lead = src.shape[:-2]
    if fill is not None:
        src = np.concatenate([src, np.ones(lead[:-1] + (1, h, w), dtype)], axis=-3)
    flat = src.reshape(src.shape[:-2] + (h * w,))

    def gather(yy, xx):
        ok = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
        idx = np.where(ok, yy * w + xx, 0)
        return np.where(ok, flat[..., idx], 0)

    if interpolation == "nearest":
        out = gather(np.rint(iy).astype(np.int64), np.rint(ix).astype(np.int64))
    else:
        x0, y0 = np.floor(ix), np.floor(iy)
        tx, ty = (ix - x0).astype(dtype), (iy - y0).astype(dtype)
        x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
        out = (gather(y0, x0) * ((1 - tx) * (1 - ty)) + gather(y0, x0 + 1) * (tx * (1 - ty))
               + gather(y0 + 1, x0) * ((1 - tx) * ty) + gather(y0 + 1, x0 + 1) * (tx * ty))
    out = out.reshape(src.shape[:-2] + (out_h, out_w)).astype(dtype)
    if fill is not None:
        mask, out = out[..., -1:, :, :], out[..., :-1, :, :]
        values = np.asarray(fill, dtype).reshape(-1, 1, 1)
        values = np.broadcast_to(values, out.shape)
        mask = np.broadcast_to(mask, out.shape)
        if interpolation == "nearest":
            out = np.where(mask < 0.5, values, out)
        else:
            out = out * mask + (1.0 - mask) * values
    return _cast_out(out, a.dtype)


def _fill_list(fill, channels):
    if fill is None:
        return None
    if isinstance(fill, (int, float)):
        return [float(fill)] * channels
    return [float(f) for f in fill]


def rotate(a, angle, interpolation="nearest", expand=False, center=None, fill=None):
    """torchvision's tensor rotate (counter-clockwise degrees, about the centre)."""
    h, w = a.shape[-2:]
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [w, h])]
    matrix = inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    ow, oh = affine_output_size(matrix, w, h) if expand else (w, h)
    return _grid_transform(a, matrix, ow, oh, interpolation, _fill_list(fill, a.shape[-3]))


def affine(a, angle, translate, scale, shear, interpolation="nearest", fill=None, center=None):
    """torchvision's tensor affine."""
    h, w = a.shape[-2:]
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [w, h])]
    matrix = inverse_affine_matrix(center_f, angle, [1.0 * t for t in translate], scale, shear)
    return _grid_transform(a, matrix, w, h, interpolation, _fill_list(fill, a.shape[-3]))


# ----------------------------------------------------------------------------- colour

def _blend(a, b, ratio):
    bound = _bound(a)
    out = np.clip(np.float32(ratio) * a.astype(np.float32)
                  + np.float32(1.0 - ratio) * np.asarray(b, np.float32), 0, bound)
    return out.astype(a.dtype)      # torch's .to(uint8) truncates


def rgb_to_grayscale(a, num_output_channels=1):
    if a.shape[-3] == 1:
        gray = a.copy()
    else:
        r, g, b = (a[..., i, :, :].astype(np.float32) for i in range(3))
        gray = (np.float32(0.2989) * r + np.float32(0.587) * g
                + np.float32(0.114) * b).astype(a.dtype)[..., None, :, :]
    return np.repeat(gray, num_output_channels, axis=-3) if num_output_channels == 3 else gray


def adjust_brightness(a, factor):
    return _blend(a, np.zeros_like(a, np.float32), factor)


def adjust_contrast(a, factor):
    gray = rgb_to_grayscale(a) if a.shape[-3] == 3 else a
    mean = gray.astype(np.float32).mean(axis=(-3, -2, -1), keepdims=True, dtype=np.float32)
    return _blend(a, mean, factor)


def adjust_saturation(a, factor):
    if a.shape[-3] == 1:
        return a.copy()
    return _blend(a, rgb_to_grayscale(a), factor)


def _rgb2hsv(img):
    r, g, b = img[..., 0, :, :], img[..., 1, :, :], img[..., 2, :, :]
    maxc, minc = img.max(axis=-3), img.min(axis=-3)
    eqc = maxc == minc
    cr = maxc - minc
    ones = np.ones_like(maxc)
    s = cr / np.where(eqc, ones, maxc)
    div = np.where(eqc, ones, cr)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (np.float32(2.0) + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (np.float32(4.0) + gc - rc)
    h = np.fmod((hr + hg + hb) / np.float32(6.0) + np.float32(1.0), np.float32(1.0))
    return h, s, maxc


def _hsv2rgb(h, s, v):
    i = np.floor(h * np.float32(6.0))
    f = h * np.float32(6.0) - i
    i = i.astype(np.int32) % 6
    one = np.float32(1.0)
    p = np.clip(v * (one - s), 0, 1)
    q = np.clip(v * (one - s * f), 0, 1)
    t = np.clip(v * (one - s * (one - f)), 0, 1)
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    out = np.zeros(h.shape[:-2] + (3,) + h.shape[-2:], np.float32)
    for k, (rr, gg, bb) in enumerate(table):
        m = i == k
        out[..., 0, :, :] += np.where(m, rr, 0)
        out[..., 1, :, :] += np.where(m, gg, 0)
        out[..., 2, :, :] += np.where(m, bb, 0)
    return out


def adjust_hue(a, factor):
    if not -0.5 <= factor <= 0.5:
        raise ValueError(f"hue_factor ({factor}) is not in [-0.5, 0.5].")
    if a.shape[-3] == 1:
        return a.copy()
    img = a.astype(np.float32) / np.float32(255.0) if _is_int(a) else a.astype(np.float32)
    h, s, v = _rgb2hsv(img)
    h = np.mod(h + np.float32(factor), np.float32(1.0))
    out = _hsv2rgb(h, s, v)
    if _is_int(a):      # torchvision's convert_image_dtype: x * (255 + 1 - 1e-3), truncated
        return (out * np.float32(255.0 + 1.0 - 1e-3)).astype(a.dtype)
    return out.astype(a.dtype)


def adjust_sharpness(a, factor):
    if a.shape[-1] <= 2 or a.shape[-2] <= 2:
        return a.copy()
    dtype = a.dtype if not _is_int(a) else np.float32
    kernel = np.ones((3, 3), dtype)
    kernel[1, 1] = 5.0
    kernel /= kernel.sum()
    x = a.astype(dtype)
    h, w = a.shape[-2:]
    blurred = np.zeros(x.shape[:-2] + (h - 2, w - 2), dtype)
    for dy in range(3):
        for dx in range(3):
            blurred += kernel[dy, dx] * x[..., dy:dy + h - 2, dx:dx + w - 2]
    degenerate = a.copy()
    degenerate[..., 1:-1, 1:-1] = _cast_out(blurred, a.dtype)
    return _blend(a, degenerate, factor)


def posterize(a, bits):
    if a.dtype != np.uint8:
        raise TypeError(f"posterize: only uint8 images are supported, got {a.dtype}")
    return a & np.uint8((0xFF << (8 - int(bits))) & 0xFF)


def invert(a):
    return (np.uint8(255) - a) if a.dtype == np.uint8 else (_bound(a) - a).astype(a.dtype)


def solarize(a, threshold):
    if threshold > _bound(a):
        raise TypeError("Threshold should be less than bound of img.")
    return np.where(a >= threshold, invert(a), a)


def autocontrast(a):
    bound = _bound(a)
    fdt = a.dtype if not _is_int(a) else np.float32
    lo = a.min(axis=(-2, -1), keepdims=True).astype(fdt)
    hi = a.max(axis=(-2, -1), keepdims=True).astype(fdt)
    with np.errstate(divide="ignore"):
        # torch's ``bound / t`` is ``t.reciprocal() * bound``: the same rounding here
        scale = (np.asarray(1, fdt) / (hi - lo)) * np.asarray(bound, fdt)
    eq = ~np.isfinite(scale)
    lo = np.where(eq, 0, lo)
    scale = np.where(eq, 1, scale)
    return np.clip((a.astype(fdt) - lo) * scale, 0, bound).astype(a.dtype)


def _equalize_channel(ch):
    hist = np.bincount(ch.reshape(-1), minlength=256)
    nonzero = hist[hist != 0]
    step = int(nonzero[:-1].sum()) // 255
    if step == 0:
        return ch
    lut = (np.cumsum(hist) + step // 2) // step
    lut = np.clip(np.concatenate([[0], lut[:-1]]), 0, 255)
    return lut[ch.astype(np.int64)].astype(np.uint8)


def equalize(a):
    if a.dtype != np.uint8:
        raise TypeError(f"equalize: only uint8 images are supported, got {a.dtype}")
    flat = a.reshape((-1,) + a.shape[-2:])
    return np.stack([_equalize_channel(ch) for ch in flat]).reshape(a.shape)


def erase(a, i, j, h, w, v):
    out = a.copy()
    out[..., i:i + h, j:j + w] = v
    return out
