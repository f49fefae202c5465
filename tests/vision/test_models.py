"""nn.vision.models vs torchvision 0.28 (reference_models.json.gz, written by
make_reference.py): every model's state-dict names and shapes in order, parameter count and
output shape; a state dict of torchvision's names loads with strict=True; weights= refuses
clearly. Building the big models draws ~140M random numbers, so the structural test skips the
initializers (the shapes come from the constructors alone)."""
import gzip
import json
import os

import numpy as np
import pytest

import nn
from nn.vision import models

import model_cases

REF = json.load(gzip.open(os.path.join(os.path.dirname(__file__),
                                       "reference_models.json.gz"), "rt"))
KNOWN_PARAMS = {"resnet18": 11_689_512, "resnet50": 25_557_032, "alexnet": 61_100_840,
                "vgg16": 138_357_544, "mobilenet_v2": 3_504_872, "googlenet": 13_004_888}


@pytest.fixture
def no_init(monkeypatch):
    """Constructors allocate but do not fill (np.empty): the structure is all that is read."""
    from nn.modules import batchnorm, conv, linear
    for cls in (linear.Linear, conv.Conv2d.__mro__[1], batchnorm._NormBase):
        monkeypatch.setattr(cls, "reset_parameters", lambda self: None)
    for name in ("kaiming_normal_", "normal_", "constant_", "trunc_normal_", "zeros_",
                 "ones_"):
        monkeypatch.setattr(nn.init, name, lambda tensor, *a, **k: tensor)


@pytest.mark.parametrize("name", sorted(REF))
def test_structure_matches_torchvision(name, no_init):
    model = getattr(models, name)()
    ref = REF[name]
    assert [[k, list(v.shape)] for k, v in model.state_dict().items()] == ref["state"]
    count = sum(p.numel() for p in model.parameters())
    assert count == ref["params"]
    if name in KNOWN_PARAMS:
        assert count == KNOWN_PARAMS[name]


def test_list_and_get_model(no_init):
    assert models.list_models() == sorted(REF)
    m = models.get_model("resnet18", num_classes=10)
    assert m.fc.out_features == 10
    with pytest.raises(ValueError, match="Unknown model"):
        models.get_model("resnet5")


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_forward_shape_and_strict_load(name):
    """A torchvision-named state dict loads with strict=True; resnet18 also runs one 32x32
    forward (mobilenet_v2's 17 depthwise shapes take ~30 s to compile, so it only loads)."""
    nn.manual_seed(0)
    model = getattr(models, name)(num_classes=1000).eval()
    ref = REF[name]
    state = {k: nn.from_numpy(np.full(shape, 0.01, np.float32) if "num_batches" not in k
                              else np.zeros(shape, np.int64))
             for k, shape in ref["state"]}
    for k, v in state.items():
        if k.endswith("running_var"):
            state[k] = nn.ones(*v.shape)
    result = model.load_state_dict(state, strict=True)
    assert not list(getattr(result, "missing_keys", [])) and not list(
        getattr(result, "unexpected_keys", []))
    assert np.allclose(model.state_dict()[ref["state"][0][0]].numpy(), 0.01)
    if name != "resnet18":
        return
    x = nn.rand(1, 3, ref["input"], ref["input"])
    with nn.no_grad():
        out = model(x)
    assert list(out.shape) == ref["output"]
    assert np.isfinite(out.numpy()).all()
    # the same deterministic weights and image give torchvision's logits
    weights = model_cases.state(ref["state"])
    model.load_state_dict({k: nn.from_numpy(v) for k, v in weights.items()}, strict=True)
    with nn.no_grad():
        logits = model(nn.from_numpy(model_cases.image(ref["input"])))
    np.testing.assert_allclose(logits.numpy().reshape(-1)[:1000:7], ref["forward"],
                               rtol=1e-4, atol=1e-4)


def test_googlenet_defaults_as_torchvision(no_init):
    g = models.googlenet()
    assert g.aux_logits is True and g.aux1 is not None and g.transform_input is False
    assert models.googlenet(aux_logits=False).aux1 is None
    assert models.GoogLeNetOutputs._fields == ("logits", "aux_logits2", "aux_logits1")


def test_weights_refused_with_a_way_to_load_a_local_file():
    for build, weights in ((models.resnet18, models.ResNet18_Weights.IMAGENET1K_V1),
                           (models.vgg16, "DEFAULT"), (models.alexnet, "IMAGENET1K_V1")):
        with pytest.raises(RuntimeError, match="cannot be downloaded here") as info:
            build(weights=weights)
        assert "load_state_dict" in str(info.value) and "nn.load" in str(info.value)
    with pytest.raises(RuntimeError, match="download"):
        models.resnet50(pretrained=True)
    assert models.ResNet50_Weights.DEFAULT is models.ResNet50_Weights.IMAGENET1K_V2
