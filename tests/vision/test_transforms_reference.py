"""nn.vision.transforms.functional vs torchvision 0.28's outputs on the same images (stored by
make_reference.py): uint8 tensors exactly (resampling to 1 LSB), float tensors to 1e-6,
PIL images exactly, numpy (H, W, C) images as the uint8 tensors; and every AutoAugment
operation (``_apply_op``) the same way."""
import os

import numpy as np
import pytest

import nn
from nn.vision.transforms import autoaugment, functional as F, InterpolationMode as I

import transform_cases

PIL = pytest.importorskip("PIL.Image")
REF = np.load(os.path.join(os.path.dirname(__file__), "reference_transforms.npz"))
IMAGES = transform_cases.images()
RESAMPLING = ("resize", "rotate", "affine", "shear", "op_Shear", "op_Rotate", "op_Translate")


def _inputs(chw):
    return {"u8": nn.from_numpy(chw.copy()),
            "f32": nn.from_numpy(chw.astype(np.float32) / 255),
            "pil": PIL.fromarray(chw.transpose(1, 2, 0).copy()),
            "np": chw.transpose(1, 2, 0).copy()}


def _flatten(out, prefix, kind, store):
    if isinstance(out, (tuple, list)):
        for k, o in enumerate(out):
            _flatten(o, f"{prefix}.{k}", kind, store)
    elif kind == "pil":
        store[prefix] = np.asarray(out)
    elif kind == "np":
        store[prefix] = out.transpose(2, 0, 1) if out.ndim == 3 else out[None]
    else:
        store[prefix] = out.numpy()


def _compare(name, got, expected, kind):
    assert got.shape == expected.shape, (name, got.shape, expected.shape)
    if kind == "f32":       # float32 sums in another order: within a few float32 ulps of 1
        np.testing.assert_allclose(got, expected, atol=5e-5 if name.startswith(RESAMPLING)
                                   else 2e-6, rtol=1e-5, err_msg=name)
    elif kind in ("u8", "np") and name.startswith(RESAMPLING):
        diff = np.abs(got.astype(int) - expected.astype(int))
        assert diff.max(initial=0) <= 1, (name, diff.max())
    else:
        assert got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
        np.testing.assert_array_equal(got, expected, err_msg=name)


@pytest.mark.parametrize("case", sorted(transform_cases.CASES))
def test_functional_case_matches_torchvision(case):
    fn = transform_cases.CASES[case]
    compared = set()
    for image_name, chw in IMAGES.items():
        for kind, img in _inputs(chw).items():
            ref_kind = "u8" if kind == "np" else kind
            key = f"{case}/{image_name}/{ref_kind}"
            if not any(k == key or k.startswith(key + ".") for k in REF.files):
                continue
            got = {}
            _flatten(fn(F, I, img), key, kind, got)
            for name, array in got.items():
                expected = REF[name]
                if kind == "np" and expected.ndim == 2:
                    expected = expected[None]
                _compare(case, array, expected, ref_kind)
                compared.add(kind)
    assert compared >= {"u8", "pil", "np"}, compared


def test_every_augmentation_operation_matches_torchvision():
    ops = sorted({k.split("/")[0] for k in REF.files if k.startswith("op_")})
    assert len(ops) >= 20
    for key in ops:
        _, op, magnitude = key.split("_")
        for image_name, chw in IMAGES.items():
            for kind in ("u8", "pil", "np"):
                img = _inputs(chw)[kind]
                out = autoaugment.apply_op(img, op, float(magnitude), I.NEAREST,
                                           None if kind == "pil" else [3.0, 4.0, 5.0])
                got = {}
                _flatten(out, "x", kind, got)
                _compare(key, got["x"], REF[f"{key}/{image_name}/{'u8' if kind == 'np' else kind}"],
                         "u8" if kind == "np" else kind)


def test_make_grid_matches_torchvision(tmp_path):
    from nn.vision import utils
    batch = np.random.default_rng(5).normal(size=(5, 1, 4, 3)).astype(np.float32)
    for k, kwargs in enumerate(transform_cases.GRID_CASES):
        got = utils.make_grid(nn.from_numpy(batch), **kwargs).numpy()
        np.testing.assert_allclose(got, REF[f"grid/{k}"], rtol=1e-6, atol=1e-6)
    utils.save_image(nn.from_numpy(np.clip(batch, 0, 1)), tmp_path / "grid.png", nrow=5)
    saved = np.asarray(PIL.open(tmp_path / "grid.png"))
    expected = utils.make_grid(nn.from_numpy(np.clip(batch, 0, 1)), nrow=5).numpy()
    np.testing.assert_array_equal(saved, np.clip(expected * 255 + 0.5, 0, 255)
                                  .astype(np.uint8).transpose(1, 2, 0))
