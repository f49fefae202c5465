"""Weights from other frameworks: ``convert_state_dict`` turns a mapping of tensors (torch
tensors, numpy arrays, anything ``numpy.asarray`` takes, or nn tensors) into nn tensors,
one by one through numpy (copied, so the two models share no memory). The keys stay as they
are: nn.models' modules carry transformers' names, so that

    model = BertModel(config)
    model.load_state_dict(convert_state_dict(hf_model.state_dict()), strict=True)

loads a transformers ``BertModel`` (``BertModel.from_transformers(hf_model)`` does both)."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor, tensor

__all__ = ["convert_state_dict", "to_numpy"]


def to_numpy(value):
    """``value`` (torch tensor, array, nn tensor) as a new numpy array."""
    if isinstance(value, Tensor):
        return value.detach().numpy().copy()
    if hasattr(value, "detach"):                      # a torch tensor, without importing torch
        value = value.detach()
        if hasattr(value, "cpu"):
            value = value.cpu()
        return np.array(value.numpy(), copy=True)
    return np.array(value, copy=True)


def convert_state_dict(state_dict):
    """{key: nn tensor} from {key: tensor-like}."""
    if not hasattr(state_dict, "items"):
        raise TypeError(f"state_dict must be a mapping of names to tensors, got "
                        f"{type(state_dict).__name__}")
    return {key: tensor(to_numpy(value)) for key, value in state_dict.items()}
