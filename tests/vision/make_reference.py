"""Write ``reference_transforms.npz`` and ``reference_models.json.gz`` from torchvision 0.28
(not a test; run by hand where torchvision's Python sources can be imported):

    python tests/vision/make_reference.py /path/holding/torchvision

The folder may hold torchvision unpacked from its wheel without the compiled extension (the
transforms and models used here are pure Python). Stored: each case of ``transform_cases`` on
the uint8 and float tensor images and on the PIL images, ``_apply_op`` of every augmentation
operation at three magnitudes, and every model's state-dict names and shapes, parameter count
and output shape.
"""
import gzip
import importlib
import json
import os
import sys
import types

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model_cases  # noqa: E402
import transform_cases  # noqa: E402

MODELS = {"alexnet": 64, "vgg11": 32, "vgg11_bn": 32, "vgg13": 32, "vgg13_bn": 32, "vgg16": 32,
          "vgg16_bn": 32, "vgg19": 32, "vgg19_bn": 32, "googlenet": 64, "resnet18": 32,
          "resnet34": 32, "resnet50": 32, "resnet101": 32, "mobilenet_v2": 32}
OP_MAGNITUDES = {"ShearX": (0.25, -0.3), "ShearY": (0.25, -0.3), "TranslateX": (3.0, -5.0),
                 "TranslateY": (2.0, -4.0), "Rotate": (12.5, -30.0), "Brightness": (0.5, -0.4),
                 "Color": (0.5, -0.4), "Contrast": (0.5, -0.4), "Sharpness": (0.5, -0.4),
                 "Posterize": (4.0, 1.0), "Solarize": (200.0, 10.0)}
OPS = ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color",
       "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"]


def import_torchvision(folder):
    """torchvision's Python modules without its compiled extension."""
    pkg = types.ModuleType("torchvision")
    pkg.__path__ = [os.path.join(folder, "torchvision")]
    sys.modules["torchvision"] = pkg
    ext = types.ModuleType("torchvision.extension")
    ext._has_ops = lambda: False
    ext._assert_has_ops = lambda: None
    ext._load_library = lambda name: None
    sys.modules["torchvision.extension"] = ext
    for sub in ("transforms", "models"):
        setattr(pkg, sub, importlib.import_module("torchvision." + sub))
    return pkg


def to_arrays(out, prefix, store):
    from PIL import Image
    if isinstance(out, (tuple, list)):
        for k, o in enumerate(out):
            to_arrays(o, f"{prefix}.{k}", store)
    elif isinstance(out, Image.Image):
        store[prefix] = np.asarray(out).copy()
    else:
        store[prefix] = out.numpy().copy()


def main(folder):
    tv = import_torchvision(folder)
    from PIL import Image
    F, I = tv.transforms.functional, tv.transforms.InterpolationMode
    store = {}
    for image_name, chw in transform_cases.images().items():
        store[f"input/{image_name}"] = chw
        inputs = {"u8": torch.from_numpy(chw.copy()),
                  "f32": torch.from_numpy(chw.astype(np.float32) / 255),
                  "pil": Image.fromarray(chw.transpose(1, 2, 0).copy())}
        for case, fn in transform_cases.CASES.items():
            for kind, img in inputs.items():
                if kind == "f32" and (case in transform_cases.UINT8_ONLY
                                      or image_name != "smooth"):
                    continue
                to_arrays(fn(F, I, img), f"{case}/{image_name}/{kind}", store)
        from torchvision.transforms.autoaugment import _apply_op
        for op in OPS:
            for magnitude in OP_MAGNITUDES.get(op, (0.0,)):
                for kind in ("u8", "pil"):
                    out = _apply_op(inputs[kind], op, magnitude, I.NEAREST,
                                    None if kind == "pil" else [3.0, 4.0, 5.0])
                    to_arrays(out, f"op_{op}_{magnitude}/{image_name}/{kind}", store)
    from torchvision.utils import make_grid
    batch = torch.from_numpy(np.random.default_rng(5).normal(size=(5, 1, 4, 3))
                             .astype(np.float32))
    for k, kwargs in enumerate(transform_cases.GRID_CASES):
        store[f"grid/{k}"] = make_grid(batch, **kwargs).numpy()
    np.savez_compressed(os.path.join(HERE, "reference_transforms.npz"), **store)
    models = {}
    for name, size in MODELS.items():
        kwargs = {"init_weights": False} if name == "googlenet" else {}
        model = getattr(tv.models, name)(**kwargs).eval()
        with torch.no_grad():
            out = model(torch.zeros(1, 3, size, size))
        models[name] = {"state": [[k, list(v.shape)] for k, v in model.state_dict().items()],
                        "params": sum(p.numel() for p in model.parameters()),
                        "input": size, "output": list(out.shape)}
        if name == "resnet18":          # the forward itself, on deterministic weights
            weights = model_cases.state(models[name]["state"])
            model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
            with torch.no_grad():
                y = model(torch.from_numpy(model_cases.image(size)))
            models[name]["forward"] = [float(v) for v in y.reshape(-1)[:1000:7]]
    with open(os.path.join(HERE, "reference_models.json.gz"), "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:      # reproducible bytes
            f.write(json.dumps(models).encode())


if __name__ == "__main__":
    main(sys.argv[1])
