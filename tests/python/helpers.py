"""Helpers the Python tests share (importable: pytest puts this folder on sys.path)."""

import os

import numpy as np
import pytest

import ember


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    """Compares an ember tensor (or anything array-like) with an expected array."""
    a = actual.detach().cpu().numpy() if isinstance(actual, ember.Tensor) else np.asarray(actual)
    e = expected.detach().cpu().numpy() if isinstance(expected, ember.Tensor) else np.asarray(expected)
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
    if isinstance(actual, ember.Tensor):
        assert tuple(actual.shape) == tuple(np.shape(e)), (actual.shape, np.shape(e))


def worker_env() -> dict:
    """The environment for a child Python process: this package on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(ember.__file__)),
                                                     env.get("PYTHONPATH", "")] if p)
    return env


# Lines a test adds to the end of pytest's summary (conftest.py prints them), e.g. a coverage table.
SUMMARY_LINES = pytest.StashKey[list]()
