"""``nn.functional``: the functional forms of the layers, as ``torch.nn.functional``.

Every differentiable operator of ``nn.functions`` is available here under PyTorch's name
(``F.relu``, ``F.conv2d``, ``F.cross_entropy``...); the tensor-level ones (``add``, ``cat``)
are also at the top of ``nn``, as they are at the top of ``torch``.
"""
from .functions import *  # noqa: F401,F403
from .functions import __all__  # noqa: F401
from .functions import kernel_calls  # noqa: F401
