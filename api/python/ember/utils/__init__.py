"""Utilities (torch.utils): ``ember.utils.data`` for datasets and loaders,
``ember.utils.checkpoint`` for activation checkpointing."""

from ember.utils import checkpoint, data  # noqa: F401
