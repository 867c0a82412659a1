"""Placeholder: filled in by its binding."""
from ember.utils import data  # noqa: F401
