"""Scripts that end while Ember is busy end well: each scenario of exit_scenarios.py (threads
inside ops, DataLoader iterators, a stuck DataLoader worker, backward on another thread, the
profiler, hooks, an exception escaping a loop) runs REPEATS times as its own process and must end
with its expected status within TIMEOUT seconds, printing no abort.

Failures at exit are races (what a thread is doing when the interpreter finalizes), so one run
proves little: each scenario runs REPEATS times, two processes at a time.
"""

import concurrent.futures
import os
import subprocess
import sys

import pytest

from exit_scenarios import SCENARIOS
from helpers import worker_env

REPEATS = 20
TIMEOUT = 30.0
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exit_scenarios.py")
# What a process that ended badly prints: std::terminate, a fatal interpreter error, a signal.
BAD_OUTPUT = ("terminate called", "Fatal Python error", "Aborted", "Segmentation fault",
              "core dumped")


def _run(name):
    """(exit status or None on a time-out, the output)."""
    try:
        r = subprocess.run([sys.executable, SCRIPT, name], env=worker_env(), capture_output=True,
                           text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out
    return r.returncode, r.stdout + r.stderr


def _problem(name, status, output):
    """What is wrong with one run, or None."""
    expected = SCENARIOS[name][1]
    if status is None:
        return f"still running after {TIMEOUT} s"
    if status != expected:
        return f"exit status {status}, expected {expected}"
    bad = [marker for marker in BAD_OUTPUT if marker in output]
    if bad:
        return f"printed {bad}"
    if expected == 1 and not ("Traceback" in output and "ValueError: bad batch" in output):
        return "the traceback of the escaping exception is missing"
    return None


@pytest.mark.parametrize("name", SCENARIOS)
def test_script_ends_well_every_time(name):
    problems = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = [pool.submit(_run, name) for _ in range(REPEATS)]
        for i, run in enumerate(runs):
            status, output = run.result()
            problem = _problem(name, status, output)
            if problem:
                problems.append(f"run {i}: {problem}; its output ends:\n{output[-1500:]}")
    assert not problems, (f"{len(problems)} of {REPEATS} runs of {name} ended badly\n"
                          + problems[0])
