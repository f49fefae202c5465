"""nn's Module system and layers, as PyTorch's ``torch.nn`` has them (issue 5)."""
from . import (activation, batchnorm, container, conv, dropout, flatten, linear, loss, module,
               normalization, padding, pooling, sparse, upsampling)
from .activation import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403

__all__ = [name for m in (module, container, linear, activation, conv, pooling, padding,
                          batchnorm, normalization, dropout, loss, sparse, flatten, upsampling)
           for name in m.__all__]

# attention, recurrent layers, RMSNorm, transposed convolutions, Transformer layers, layers
# over the composed functions (distances, unfold/fold, EmbeddingBag, RReLU, margin losses)
from . import attention, composed, conv_transpose, rms_norm, rnn, transformer  # noqa: E402
from .attention import *  # noqa: F401,F403,E402
from .composed import *  # noqa: F401,F403,E402
from .conv_transpose import *  # noqa: F401,F403,E402
from .rms_norm import *  # noqa: F401,F403,E402
from .rnn import *  # noqa: F401,F403,E402
from .transformer import *  # noqa: F401,F403,E402
__all__ += [name for m in (attention, composed, conv_transpose, rms_norm, rnn, transformer)
            for name in m.__all__]
from . import sync_batchnorm  # noqa: E402  (BatchNorm over nn.distributed)
from .sync_batchnorm import SyncBatchNorm  # noqa: F401,E402
__all__ += sync_batchnorm.__all__
