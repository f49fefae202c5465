"""Models built from nn's compiled layers, with the module and parameter names of their
reference implementations, so that converted weights load as they are."""
from .bert import *  # noqa: F401,F403
from .bert import __all__ as _bert_all
from .bert_config import BertConfig
from .convert import convert_state_dict, to_numpy
from .outputs import *  # noqa: F401,F403
from .outputs import __all__ as _outputs_all

__all__ = ["BertConfig", "convert_state_dict", "to_numpy"] + _bert_all + _outputs_all
