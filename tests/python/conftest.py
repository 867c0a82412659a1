"""Shared fixtures of the Python tests (run by ctest, one test per file: tests/CMakeLists.txt).

The package under test is the build tree's (PYTHONPATH=<build>/python); PyTorch, where it is
importable, is the reference for the comparisons that name the `torch` fixture.
"""


import numpy as np
import pytest

import ember
from helpers import SUMMARY_LINES


@pytest.fixture
def rng():
    """A seeded NumPy generator: the same random inputs on every run."""
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def torch():
    """PyTorch, for comparisons; the test is skipped (and reported so) where it is missing."""
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)
    yield


def pytest_terminal_summary(terminalreporter, config):
    """Prints what tests put under helpers.SUMMARY_LINES (the torch coverage table)."""
    lines = config.stash.get(SUMMARY_LINES, [])
    if lines:
        terminalreporter.section("report")
        for line in lines:
            terminalreporter.write_line(line)
