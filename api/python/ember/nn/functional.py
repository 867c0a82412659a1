"""The functional forms of the layers (torch.nn.functional)."""

from ember._C.functional import *  # noqa: F401,F403
