"""``nn.utils``, as ``torch.nn.utils``: gradient clipping (``clip_grad_norm_``,
``clip_grad_value_``), ``parameters_to_vector`` / ``vector_to_parameters`` and ``nn.utils.rnn``
(``pad_sequence``); ``nn.utils.data`` is ``nn.data`` (as ``torch.utils.data``), so that
``torch.utils.data.DataLoader`` resolves after ``import nn as torch``."""
from . import rnn  # noqa: F401
from .. import data  # noqa: F401  (torch.utils.data: nn.utils.data is nn.data)
from .clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "rnn", "data"]
