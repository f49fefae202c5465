"""``nn.optim``, as ``torch.optim``: the ``Optimizer`` base class, ``SGD``, ``Adam``, ``AdamW``,
``Adagrad``, ``RMSprop``, ``Adamax``, ``Adadelta``, ``NAdam`` and ``RAdam`` (each parameter's
update one compiled, fused te kernel), ``LBFGS`` (closure-based), and the learning-rate
schedulers in ``nn.optim.lr_scheduler``."""
from . import lr_scheduler  # noqa: F401
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adamax", "Adadelta",
           "NAdam", "RAdam", "LBFGS", "lr_scheduler"]
