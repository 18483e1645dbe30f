"""The layers of ampc.nn, one file per family as in torch.nn.modules. Each family file lists its
public names in __all__; a new family is one more line below (one line per family, so that
parallel additions merge without conflict), and __all__ follows from the imports."""
from .activation import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .channelshuffle import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403

import sys as _sys  # noqa: E402

# every family imported above, in that order (each its own __all__)
__all__ = [name for _family in [m for k, m in _sys.modules.items() if k.startswith(__name__ + ".")]
           for name in _family.__all__]
