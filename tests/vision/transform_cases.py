"""The deterministic transform cases compared with torchvision: each is a function of
(the functional module, its InterpolationMode, an image). ``make_reference.py`` runs them with
torchvision 0.28 and stores the results; ``test_transforms.py`` runs them with nn.vision."""
import math

import numpy as np


def images():
    """uint8 (3, 11, 14): noise, and a smooth gradient with a little noise (for resizing)."""
    rng = np.random.default_rng(1234)
    noise = rng.integers(0, 256, (3, 11, 14), dtype=np.uint8)
    yy, xx = np.mgrid[0:11, 0:14]
    smooth = np.stack([(xx * 18 + yy * 3), (yy * 22 + 5), (xx * yy * 2 + 40)], 0)
    smooth = np.clip(smooth + rng.integers(-6, 7, smooth.shape), 0, 255).astype(np.uint8)
    return {"noise": noise, "smooth": smooth}


def _is_float(x):
    return getattr(x, "is_floating_point", lambda: False)()


def _case_table():
    c = {}
    for mode in ("NEAREST", "BILINEAR", "BICUBIC"):
        for aa in (True, False):
            c[f"resize_down_{mode}_{aa}"] = (lambda F, I, x, m=mode, a=aa:
                                             F.resize(x, [5, 6], getattr(I, m), antialias=a))
            c[f"resize_up_{mode}_{aa}"] = (lambda F, I, x, m=mode, a=aa:
                                           F.resize(x, [17, 23], getattr(I, m), antialias=a))
        c[f"resize_int_{mode}"] = lambda F, I, x, m=mode: F.resize(x, 7, getattr(I, m))
    c["resize_max_size"] = lambda F, I, x: F.resize(x, 8, I.BILINEAR, max_size=9)
    c["center_crop_small"] = lambda F, I, x: F.center_crop(x, [6, 5])
    c["center_crop_large"] = lambda F, I, x: F.center_crop(x, [14, 17])
    c["crop_outside"] = lambda F, I, x: F.crop(x, -2, 9, 6, 8)
    for mode in ("constant", "edge", "reflect", "symmetric"):
        c[f"pad_{mode}"] = lambda F, I, x, m=mode: F.pad(x, [2, 1, 3, 2], fill=7, padding_mode=m)
    c["pad_two"] = lambda F, I, x: F.pad(x, [1, 2], fill=5)
    c["hflip"] = lambda F, I, x: F.hflip(x)
    c["vflip"] = lambda F, I, x: F.vflip(x)
    for mode in ("NEAREST", "BILINEAR"):
        c[f"rotate_{mode}"] = lambda F, I, x, m=mode: F.rotate(x, 33.0, getattr(I, m))
        c[f"rotate_expand_{mode}"] = (lambda F, I, x, m=mode:
                                      F.rotate(x, -50.0, getattr(I, m), expand=True))
        c[f"rotate_fill_{mode}"] = (lambda F, I, x, m=mode:
                                    F.rotate(x, 21.0, getattr(I, m), fill=[9.0, 99.0, 199.0]))
        c[f"affine_{mode}"] = (lambda F, I, x, m=mode:
                               F.affine(x, 12.0, [2, -1], 1.2, [10.0, -5.0], getattr(I, m)))
    c["shear_corner"] = lambda F, I, x: F.affine(
        x, 0.0, [0, 0], 1.0, [math.degrees(math.atan(0.2)), 0.0], I.NEAREST, None, [0, 0])
    c["gray1"] = lambda F, I, x: F.rgb_to_grayscale(x)
    c["gray3"] = lambda F, I, x: F.rgb_to_grayscale(x, 3)
    for name, f in (("brightness", 1.6), ("contrast", 0.4), ("saturation", 1.7),
                    ("sharpness", 1.8), ("sharpness_low", 0.3)):
        fn = "adjust_" + name.split("_")[0]
        c[name] = lambda F, I, x, fn=fn, f=f: getattr(F, fn)(x, f)
    c["hue_pos"] = lambda F, I, x: F.adjust_hue(x, 0.21)
    c["hue_neg"] = lambda F, I, x: F.adjust_hue(x, -0.37)
    c["posterize"] = lambda F, I, x: F.posterize(x, 3)
    c["solarize"] = lambda F, I, x: F.solarize(x, 0.5 if _is_float(x) else 128)
    c["autocontrast"] = lambda F, I, x: F.autocontrast(x)
    c["equalize"] = lambda F, I, x: F.equalize(x)
    c["invert"] = lambda F, I, x: F.invert(x)
    c["five_crop"] = lambda F, I, x: F.five_crop(x, [4, 5])
    c["ten_crop"] = lambda F, I, x: F.ten_crop(x, [4, 5])
    c["ten_crop_v"] = lambda F, I, x: F.ten_crop(x, 5, vertical_flip=True)
    return c


CASES = _case_table()
# PIL applies the colour ops differently for float images, and uint8-only ones refuse floats
UINT8_ONLY = {"posterize", "equalize"}

# torchvision.utils.make_grid's settings compared (on a (5, 1, 4, 3) float batch)
GRID_CASES = [{}, {"nrow": 2, "padding": 1, "pad_value": 0.5}, {"normalize": True},
              {"normalize": True, "scale_each": True, "nrow": 3},
              {"normalize": True, "value_range": (-1.0, 1.0), "padding": 0}]
