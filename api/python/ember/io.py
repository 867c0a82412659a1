"""Placeholder: filled in by its binding."""
def save(*a, **k): raise NotImplementedError
def load(*a, **k): raise NotImplementedError
