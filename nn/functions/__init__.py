"""nn's differentiable operators, one module per theme, each operator an autograd Function
whose forward and backward run compiled te kernels (declared in ``nn/ops``).

The torch-level names (``nn.add``, ``nn.cat``...), the ``nn.functional`` names and the
methods of ``nn.Tensor`` all come from here. Some operators have the name of their theme's
module (``dropout``, ``norm``): as attributes of this package the operators win, the modules
are in ``THEMES``.
"""
import importlib

from .base import broadcast_shape, kernel_calls, result_type, to_device  # noqa: F401
from .activation import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .index import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .pool import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403

THEMES = tuple(importlib.import_module(f"{__name__}.{theme}") for theme in (
    "activation", "conv", "dropout", "elementwise", "index", "linalg", "loss", "norm", "pool",
    "reduce", "shape", "sorting", "sparse", "vision"))
__all__ = [name for module in THEMES for name in module.__all__]

# attention, RMS normalization, transposed convolution, einsum, distances, unfold/fold,
# embedding bags, margin losses, rrelu (composed operators)
from .attention import *  # noqa: F401,F403,E402
from .composed import *  # noqa: F401,F403,E402
from .conv_transpose import *  # noqa: F401,F403,E402
from .einsum import *  # noqa: F401,F403,E402
from .rms_norm import *  # noqa: F401,F403,E402
_EXTRA = tuple(importlib.import_module(f"{__name__}.{theme}") for theme in (
    "attention", "composed", "conv_transpose", "einsum", "rms_norm"))
THEMES += _EXTRA
__all__ += [name for module in _EXTRA for name in module.__all__]
