"""``nn.optim``, as ``torch.optim``: the ``Optimizer`` base class, ``SGD``, ``Adam``, ``AdamW``,
``Adagrad``, ``RMSprop``, ``Adamax``, ``Adadelta``, ``NAdam`` and ``RAdam``, ``Rprop`` and
``ASGD`` (each parameter's update one compiled, fused te kernel), ``LBFGS`` (closure-based),
and the learning-rate schedulers in ``nn.optim.lr_scheduler``."""
from . import lr_scheduler  # noqa: F401
from .adadelta import Adadelta
from .adagrad import Adagrad
from .asgd import ASGD
from .adam import Adam, AdamW
from .adamax import Adamax
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adamax", "Adadelta",
           "NAdam", "RAdam", "Rprop", "ASGD", "LBFGS", "lr_scheduler"]
