"""torch.nn.modules: the classes of ember.nn under the name scripts also reach them by
(``nn.modules.Module``, ``nn.modules.Linear``)."""

from ember.nn import *  # noqa: F401,F403
from ember.nn import Module  # noqa: F401
