"""Placeholder: filled in by its binding."""
