"""Reference models (filled in by the models binding)."""
