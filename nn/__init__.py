"""tensorweave's PyTorch-shaped layer: ``nn`` plays both ``torch`` and ``torch.nn``.

``nn.Tensor``, ``nn.tensor`` and the factories live in ``nn.tensor``; the graph machinery in
``nn.autograd``; the differentiable operators, each a compiled te kernel, in ``nn.functions``
(exported here by their torch-level names, and as ``nn.functional`` for the layer functions);
the Module system and layers in ``nn.modules``; initializers in ``nn.init``.
"""
from .tensor import *  # noqa: F401,F403
from .dtypes import *  # noqa: F401,F403,E402  (nn.float32...; nn.int / nn.bool hide builtins)
from .device import device  # noqa: F401
from . import cuda  # noqa: F401,E402
from .random import get_rng_state, initial_seed, seed, set_rng_state  # noqa: F401
from . import autograd, functions, functional  # noqa: E402  (after tensor, which they build on)
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .autograd import inference_mode, is_inference_mode_enabled  # noqa: F401
from .functions import *  # noqa: F401,F403
from . import modules  # noqa: E402  (layers on top of the tensor and its operators)
from .modules import *  # noqa: F401,F403
from . import data, datasets, init, optim, utils  # noqa: F401,E402  (they build on the layers)
from . import linalg  # noqa: F401,E402  (torch.linalg: norms and small factorizations)
from .linalg import det, inverse, logdet, slogdet  # noqa: F401,E402  (torch's top level)
from .linalg import cholesky_deprecated as cholesky  # noqa: F401,E402
from .serialization import CheckpointError, load, save  # noqa: F401,E402
from . import intrinsic, qat  # noqa: F401,E402  (fused and QAT modules for quantization)
from . import quantized, quantization  # noqa: F401,E402  (quantized tensors, their ops)
from .quantized.dtypes import (qint8, qint32, quint8, per_channel_affine,  # noqa: F401,E402
                               per_channel_symmetric, per_tensor_affine, per_tensor_symmetric)
from .quantized.qtensor import cat, concat, quantize_per_channel  # noqa: F401,E402
from .quantized.qtensor import quantize_per_tensor  # noqa: F401,E402
from . import models  # noqa: F401,E402  (BERT from the layers above)
from .random import Generator, default_generator, poisson  # noqa: F401,E402  (torch.Generator)
from . import backends, random  # noqa: F401,E402  (torch.backends.cudnn flags, torch.random)
from ._script_compat import (__version__, get_num_interop_threads,  # noqa: F401,E402
                             get_num_threads, set_num_interop_threads, set_num_threads)
from . import _aliases  # noqa: E402  (torch's module names: nn.nn is nn, nn.utils.data is nn.data)
nn = _aliases.sys.modules[__name__]
_aliases.install()
from . import distributed, parallel  # noqa: F401,E402  (MPI data parallelism; mpi4py loads lazily)
from . import storage  # noqa: F401,E402  (Tensor.untyped_storage/storage_offset/data_ptr...)
from .storage import as_strided, empty_strided, TypedStorage, UntypedStorage  # noqa: F401,E402
from . import spconv  # noqa: F401,E402  (spconv 2.x sparse convolution; ~50 ms of 1.4 s)
