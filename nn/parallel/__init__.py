"""nn.parallel: ``DistributedDataParallel`` (one model replica per process, gradients averaged
over ``nn.distributed``), as ``torch.nn.parallel``."""
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
