"""nn.data: datasets, samplers and the DataLoader, as torch.utils.data has them.

``Dataset``/``IterableDataset`` and their combinators (``TensorDataset``, ``ConcatDataset``,
``ChainDataset``, ``Subset``, ``random_split``) say what the samples are; samplers say in which
order a map-style dataset is read; ``DataLoader`` batches the samples (``default_collate``),
in the main process or in worker processes (``get_worker_info`` inside a worker).
``nn.data.collate`` has the collation machinery (``collate`` with a ``collate_fn_map`` of
per-type functions) for custom collate functions.
"""
from .collate import default_collate, default_convert  # noqa: F401
from .dataloader import DataLoader  # noqa: F401
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset,  # noqa: F401
                      Subset, TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,  # noqa: F401
                      SubsetRandomSampler, WeightedRandomSampler)
from .worker import WorkerInfo, get_worker_info  # noqa: F401
from . import distributed  # noqa: F401,E402  (DistributedSampler)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert", "get_worker_info", "WorkerInfo"]
