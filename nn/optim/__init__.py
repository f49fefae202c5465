"""``nn.optim``, as ``torch.optim``: the ``Optimizer`` base class, ``SGD``, ``Adam``, ``AdamW``,
``Adagrad`` and ``RMSprop`` (each parameter's update one compiled, fused te kernel), and the
learning-rate schedulers in ``nn.optim.lr_scheduler``."""
from . import lr_scheduler  # noqa: F401
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "lr_scheduler"]
