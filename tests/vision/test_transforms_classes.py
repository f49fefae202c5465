"""The transform classes: deterministic ones vs numpy / torch references on numpy HWC, PIL and
tensor images; random ones seeded by nn.manual_seed, equal to the functional op at the
parameters they drew, and distributed as torchvision documents."""
import math

import numpy as np
import pytest
import torch

import nn
from nn.vision import transforms as T
from nn.vision.transforms import functional as F
from nn.vision.transforms import v2

PIL = pytest.importorskip("PIL.Image")
RNG = np.random.default_rng(7)
HWC = RNG.integers(0, 256, (20, 24, 3), dtype=np.uint8)


def test_to_tensor_normalize_compose_on_numpy_pil_tensor():
    expected = HWC.transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    for img in (HWC, PIL.fromarray(HWC)):
        np.testing.assert_array_equal(T.ToTensor()(img).numpy(), expected)
    mean, std = [0.5, 0.4, 0.3], [0.2, 0.25, 0.3]
    out = T.Compose([T.ToTensor(), T.Normalize(mean, std)])(HWC).numpy()
    ref = torch.from_numpy(expected)
    ref = ((ref - torch.tensor(mean)[:, None, None]) / torch.tensor(std)[:, None, None]).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    gray = np.ascontiguousarray(HWC[:, :, 0])
    assert T.ToTensor()(gray).shape == (1, 20, 24)
    assert T.PILToTensor()(PIL.fromarray(HWC)).dtype == "uint8"
    back = T.ToPILImage()(nn.from_numpy(expected))
    np.testing.assert_array_equal(np.asarray(back), HWC)      # x/255*255 truncates back


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_resize_tensor_uint8_within_one_lsb_of_torch(mode):
    img = RNG.integers(0, 256, (3, 37, 41), dtype=np.uint8)
    for size, aa in (((13, 17), True), ((13, 17), False), ((50, 61), True)):
        ours = F.resize(nn.from_numpy(img), list(size), getattr(T.InterpolationMode,
                                                                mode.upper()), antialias=aa)
        ref = torch.nn.functional.interpolate(torch.from_numpy(img)[None].float(), size=size,
                                              mode=mode, align_corners=False, antialias=aa)
        ref = ref.clamp(0, 255).round().to(torch.uint8)[0].numpy()
        assert np.abs(ours.numpy().astype(int) - ref.astype(int)).max() <= 1
        floats = F.resize(nn.from_numpy(img.astype(np.float32)), list(size),
                          getattr(T.InterpolationMode, mode.upper()), antialias=aa)
        ref_f = torch.nn.functional.interpolate(torch.from_numpy(img)[None].float(), size=size,
                                                mode=mode, align_corners=False, antialias=aa)
        np.testing.assert_allclose(floats.numpy(), ref_f[0].numpy(), rtol=1e-4, atol=1e-3)


def test_resize_numpy_equals_tensor_and_pil_equals_pillow():
    r = T.Resize(9)
    a = r(HWC)
    assert a.shape == (9, 10, 3) and a.dtype == np.uint8          # short side 9, 24*9/20
    t = r(nn.from_numpy(HWC.transpose(2, 0, 1).copy())).numpy()
    np.testing.assert_array_equal(a.transpose(2, 0, 1), t)
    p = r(PIL.fromarray(HWC))
    np.testing.assert_array_equal(np.asarray(p),
                                  np.asarray(PIL.fromarray(HWC).resize((10, 9), 2)))
    assert T.Resize(9, max_size=10)(HWC).shape[:2] == (9, 10)
    assert T.Resize(12, max_size=13)(HWC).shape[:2] == (11, 13)   # int(13 * 12 / 14)


def test_seeded_random_transforms_repeat():
    pipeline = T.Compose([T.RandomResizedCrop(12), T.RandomHorizontalFlip(),
                          T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomRotation(20),
                          T.AutoAugment(), T.RandAugment(2, 9, 31), T.TrivialAugmentWide(),
                          T.PILToTensor(), T.RandomErasing(p=1.0, value="random")])
    outs = []
    for _ in range(2):
        nn.manual_seed(5)
        outs.append(pipeline(PIL.fromarray(HWC)).numpy())
    np.testing.assert_array_equal(*outs)
    nn.manual_seed(6)
    assert not np.array_equal(pipeline(PIL.fromarray(HWC)).numpy(), outs[0])


def _same_as(transform, params_fn, apply_fn, img, seed=3):
    nn.manual_seed(seed)
    out = transform(img)
    nn.manual_seed(seed)
    expected = apply_fn(img, *params_fn())
    return out, expected


def test_random_crop_resized_crop_rotation_match_their_functional_op():
    img = nn.from_numpy(HWC.transpose(2, 0, 1).copy())
    out, ref = _same_as(T.RandomCrop(8), lambda: T.RandomCrop.get_params(img, (8, 8)),
                        lambda x, i, j, h, w: F.crop(x, i, j, h, w), img)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    scale, ratio = (0.2, 0.6), (0.5, 2.0)
    out, ref = _same_as(T.RandomResizedCrop(10, scale, ratio),
                        lambda: T.RandomResizedCrop.get_params(img, scale, ratio),
                        lambda x, i, j, h, w: F.resized_crop(x, i, j, h, w, [10, 10]), img)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    out, ref = _same_as(T.RandomRotation((10, 30)),
                        lambda: (T.RandomRotation.get_params([10.0, 30.0]),),
                        lambda x, a: F.rotate(x, a, fill=[0.0] * 3), img)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    for _ in range(50):
        i, j, h, w = T.RandomResizedCrop.get_params(img, scale, ratio)
        assert 0 <= i <= 20 - h and 0 <= j <= 24 - w
        assert 0.2 * 480 * 0.8 <= h * w <= 0.6 * 480 * 1.25 and 0.4 <= w / h <= 2.5
        assert 10 <= T.RandomRotation.get_params([10.0, 30.0]) <= 30


def test_random_crop_offsets_and_flip_rate_are_uniform():
    nn.manual_seed(0)
    offsets = {T.RandomCrop.get_params(HWC, (18, 20))[:2] for _ in range(300)}
    assert offsets == {(i, j) for i in range(3) for j in range(5)}
    flips = sum(np.array_equal(T.RandomHorizontalFlip()(HWC), HWC[:, ::-1])
                for _ in range(400))
    assert abs(flips - 200) < 4 * math.sqrt(100)          # binomial(400, 0.5): 4 sigma
    padded = T.RandomCrop(24, padding=2)(HWC)
    assert padded.shape == (24, 24, 3)
    assert T.RandomCrop((30, 30), pad_if_needed=True, fill=9)(HWC).shape == (30, 30, 3)


def test_color_jitter_matches_its_drawn_factors():
    img = PIL.fromarray(HWC)
    jitter = T.ColorJitter(0.5, 0.5, 0.5, 0.2)
    nn.manual_seed(11)
    out = jitter(img)
    nn.manual_seed(11)
    order, b, c, s, h = T.ColorJitter.get_params(jitter.brightness, jitter.contrast,
                                                 jitter.saturation, jitter.hue)
    assert 0.5 <= b <= 1.5 and -0.2 <= h <= 0.2 and sorted(order.tolist()) == [0, 1, 2, 3]
    ref = img
    for k in order.tolist():
        ref = [lambda x: F.adjust_brightness(x, b), lambda x: F.adjust_contrast(x, c),
               lambda x: F.adjust_saturation(x, s), lambda x: F.adjust_hue(x, h)][k](ref)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))


def test_five_ten_crop_pad_grayscale_lambda_classes():
    crops = T.FiveCrop(6)(HWC)
    assert len(crops) == 5
    np.testing.assert_array_equal(crops[0], HWC[:6, :6])
    np.testing.assert_array_equal(crops[3], HWC[-6:, -6:])
    np.testing.assert_array_equal(crops[4], HWC[7:13, 9:15])
    ten = T.TenCrop(6)(HWC)
    np.testing.assert_array_equal(ten[5], HWC[:, ::-1][:6, :6])
    np.testing.assert_array_equal(T.Pad(2, padding_mode="reflect")(HWC),
                                  np.pad(HWC, ((2, 2), (2, 2), (0, 0)), mode="reflect"))
    g = T.Grayscale()(HWC)
    ref = (np.float32(0.2989) * HWC[..., 0] + np.float32(0.587) * HWC[..., 1]
           + np.float32(0.114) * HWC[..., 2]).astype(np.uint8)
    assert g.shape == (20, 24, 1)       # HWC in, HWC out
    np.testing.assert_array_equal(g[..., 0], ref)
    assert T.Lambda(lambda x: x[:2])(HWC).shape == (2, 24, 3)
    assert T.CenterCrop(4)(PIL.fromarray(HWC)).size == (4, 4)


def test_random_erasing_and_v2_names():
    img = nn.from_numpy(HWC.transpose(2, 0, 1).astype(np.float32) / 255)
    nn.manual_seed(1)
    out = T.RandomErasing(p=1.0, value=(0.1, 0.2, 0.3))(img).numpy()
    changed = np.argwhere((out != img.numpy()).any(0))
    (i0, j0), (i1, j1) = changed.min(0), changed.max(0)
    np.testing.assert_allclose(out[:, i0:i1 + 1, j0:j1 + 1],
                               np.broadcast_to(np.float32([0.1, 0.2, 0.3])[:, None, None],
                                               (3, i1 - i0 + 1, j1 - j0 + 1)))
    assert np.array_equal(T.RandomErasing(p=0.0)(img).numpy(), img.numpy())
    image = v2.ToImage()(HWC)
    assert image.dtype == "uint8" and image.shape == (3, 20, 24)
    scaled = v2.ToDtype("float32", scale=True)(image)
    np.testing.assert_allclose(scaled.numpy(), HWC.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    seed_style = v2.Compose([v2.Resize((32, 32)), T.ToTensor()])(PIL.fromarray(HWC[..., 0]))
    assert seed_style.shape == (1, 32, 32)


def test_trivial_augment_changes_most_images_and_keeps_kind():
    nn.manual_seed(0)
    img = PIL.fromarray(HWC)
    outs = [T.TrivialAugmentWide()(img) for _ in range(60)]
    assert all(isinstance(o, PIL.Image) and o.size == img.size for o in outs)
    changed = sum(not np.array_equal(np.asarray(o), HWC) for o in outs)
    assert changed >= 40      # Identity is 1 of 14 ops; a few others can be no-ops
    t = T.RandAugment()(nn.from_numpy(HWC.transpose(2, 0, 1).copy()))
    assert t.shape == (3, 20, 24) and t.dtype == "uint8"


def test_batched_tensors_transform_image_by_image():
    batch = nn.from_numpy(RNG.integers(0, 256, (2, 3, 12, 14), dtype=np.uint8))
    ops = [lambda x: F.resize(x, [7, 9]), lambda x: F.rotate(x, 17.0, fill=[1.0, 2.0, 3.0]),
           lambda x: F.adjust_hue(x, 0.1), lambda x: F.equalize(x), lambda x: F.pad(x, 2),
           lambda x: F.center_crop(x, 8), lambda x: F.adjust_sharpness(x, 2.0),
           lambda x: F.affine(x, 5.0, [1, 2], 1.1, [3.0, 0.0])]
    for op in ops:
        whole = op(batch).numpy()
        for k in range(2):
            np.testing.assert_array_equal(whole[k], op(batch[k]).numpy())


def test_augmentation_choices_are_uniform(monkeypatch):
    from nn.vision.transforms import autoaugment
    nn.manual_seed(0)
    counts = np.bincount([T.AutoAugment.get_params(25)[0] for _ in range(2500)], minlength=25)
    assert counts.min() > 100 - 4 * 10 and counts.max() < 100 + 4 * 10   # binomial, 4 sigma
    seen = []
    monkeypatch.setattr(autoaugment, "apply_op",
                        lambda img, op, magnitude, interpolation, fill: seen.append(
                            (op, magnitude)) or img)
    for _ in range(1400):
        T.TrivialAugmentWide()(HWC)
    ops = {}
    for op, magnitude in seen:
        ops.setdefault(op, []).append(magnitude)
    assert len(ops) == 14 and all(60 < len(v) < 140 for v in ops.values())   # 100 each
    rotate = np.array(ops["Rotate"])
    assert rotate.min() >= -135 and rotate.max() <= 135 and (rotate < 0).any()
    seen.clear()
    for _ in range(200):
        T.RandAugment(num_ops=2, magnitude=9)(HWC)
    assert len(seen) == 400
    shear = [abs(m) for op, m in seen if op == "ShearX"]
    assert shear and np.allclose(shear, 0.3 * 9 / 30)               # bin 9 of 31 in [0, 0.3]
