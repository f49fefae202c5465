"""The ``weights=`` argument of the model builders: torchvision's weight names exist (so that
scripts naming them import), but nothing can be downloaded here, so asking for pretrained weights
raises an error that says how to load a local file instead."""
from __future__ import annotations

import enum

__all__ = ["WeightsEnum", "handle_weights", "make_weights"]


class WeightsEnum(enum.Enum):
    """A model's pretrained weight sets, by torchvision's names; ``url`` says where torchvision
    downloads them from."""

    @property
    def url(self):
        return self.value

    @classmethod
    def verify(cls, obj):
        if obj is None or isinstance(obj, cls):
            return obj
        if isinstance(obj, str):
            return cls[obj.replace(cls.__name__ + ".", "")]
        raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but received "
                        f"{type(obj).__name__}.")


def make_weights(name, urls, default):
    """An enum ``name`` with members ``urls`` (name -> url) and ``DEFAULT`` = ``default``."""
    members = dict(urls)
    weights = WeightsEnum(name, members)
    weights.DEFAULT = weights[default]
    return weights


def handle_weights(builder, weights, kwargs):
    """Refuse ``weights`` / ``pretrained=True`` with the way to load a local file."""
    pretrained = kwargs.pop("pretrained", False)
    kwargs.pop("progress", None)
    if weights is None and not pretrained:
        return
    named = weights if weights is not None else "DEFAULT"
    url = getattr(weights, "url", None)
    where = f" (torchvision downloads them from {url})" if url else ""
    raise RuntimeError(
        f"nn.vision.models.{builder}(weights={named!s}): pretrained weights cannot be downloaded "
        f"here{where}; nn.vision downloads nothing. Build the model without weights and load a "
        f"local file: model = nn.vision.models.{builder}(); model.load_state_dict("
        f"nn.load('weights.nn')) for a state dict saved by nn.save, or, with PyTorch installed, "
        f"model.load_state_dict({{k: nn.from_numpy(v.numpy()) for k, v in torch.load("
        f"'file.pth', weights_only=True).items()}}) for torchvision's .pth file (the parameter "
        f"names are torchvision's, so strict=True loading works).")
