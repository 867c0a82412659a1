"""ember.distributed and DistributedDataParallel across real processes on loopback.

Each job starts world_size processes of distributed_worker.py (gloo, env:// rendezvous on
127.0.0.1 and a free port); every rank records what it saw and the tests compare it with values
computed here: closed forms for the collectives, a one-process replay of the training for DDP.
Every job is bounded: a rank still running at its deadline is killed and the test fails.
"""

import os
import pickle
import random
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn.functional as F
from helpers import worker_env

import distributed_worker as worker

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(),
                                reason="the gloo backend is not loaded")

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "distributed_worker.py")


def free_port() -> int:
    """A loopback port below the ephemeral range, which concurrent tests' outgoing connections
    draw from (Note [Test ports below the ephemeral range] in distributed_test.cpp)."""
    for _ in range(1000):
        port = random.randint(20000, 32767)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port in 20000-32767")


def run_job(scenario, world, tmp_path, deadline_s=60.0):
    """Runs `scenario` on `world` ranks; returns (exit codes, results by rank, outputs)."""
    port = free_port()
    procs, logs = [], []
    for rank in range(world):
        env = worker_env()
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
        log = open(tmp_path / f"rank{rank}.log", "w+")
        logs.append(log)
        procs.append(subprocess.Popen([sys.executable, WORKER, scenario, str(tmp_path)], env=env,
                                      stdout=log, stderr=subprocess.STDOUT))
    end = time.monotonic() + deadline_s
    hung = []
    for rank, p in enumerate(procs):
        try:
            p.wait(timeout=max(end - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            hung.append(rank)
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    assert not hung, (f"ranks {hung} of '{scenario}' still ran after {deadline_s} s:\n"
                      + "\n".join(outputs))
    results = []
    for rank in range(world):
        path = tmp_path / f"rank{rank}.pkl"
        results.append(pickle.loads(path.read_bytes()) if path.exists() else None)
    return [p.returncode for p in procs], results, outputs


def run_ok(scenario, world, tmp_path):
    codes, results, outputs = run_job(scenario, world, tmp_path)
    assert codes == [0] * world, "\n".join(outputs)
    return results


# --- The collectives, on 2 and 3 ranks -----------------------------------------------------------


@pytest.fixture(scope="module", params=[2, 3], ids=lambda w: f"world{w}")
def collectives(request, tmp_path_factory):
    world = request.param
    return world, run_ok("collectives", world, tmp_path_factory.mktemp(f"collectives{world}"))


def values(world):
    """Every rank's input of the collectives (distributed_worker.value), stacked."""
    base = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    return np.stack([base + 10 * r for r in range(world)])


def test_group_state(collectives):
    world, results = collectives
    for rank, r in enumerate(results):
        assert r["initialized"] and r["backend"] == "gloo"
        assert (r["rank"], r["world"]) == (rank, world)
        assert r["group_world"] == (rank, world)
        assert r["initialized_after_destroy"] is False and r["world_after_destroy"] is None


def test_all_reduce_every_op(collectives):
    world, results = collectives
    v = values(world)
    expected = {"SUM": v.sum(0), "AVG": v.mean(0), "PRODUCT": v.prod(0), "MIN": v.min(0),
                "MAX": v.max(0)}
    for r in results:
        for op, e in expected.items():
            np.testing.assert_allclose(r["all_reduce_" + op], e, rtol=1e-6, err_msg=op)
        assert r["all_reduce_int64"].dtype == np.int64
        np.testing.assert_array_equal(r["all_reduce_int64"], [world * (world + 1) // 2] * 4)


def test_broadcast_and_gathers(collectives):
    world, results = collectives
    v = values(world)
    for r in results:
        np.testing.assert_array_equal(r["broadcast"], v[world - 1])
        np.testing.assert_array_equal(r["all_gather"], v)
        np.testing.assert_array_equal(r["all_gather_into_tensor"], v.reshape(world * 2, 3))


def test_reduce_scatter_and_all_to_all(collectives):
    world, results = collectives
    inputs = np.stack([np.arange(2 * world, dtype=np.float32) + 100 * r for r in range(world)])
    for rank, r in enumerate(results):
        np.testing.assert_array_equal(r["reduce_scatter_tensor"],
                                      inputs.sum(0)[2 * rank:2 * rank + 2])
        np.testing.assert_array_equal(r["reduce_scatter_max"], [10.0 * rank + world - 1] * 2)
        # Block j of the output is block `rank` of rank j's input.
        np.testing.assert_array_equal(r["all_to_all_single"],
                                      inputs[:, 2 * rank:2 * rank + 2].reshape(-1))
        np.testing.assert_array_equal(r["all_to_all"],
                                      [[10.0 * j + rank] * 3 for j in range(world)])


def test_async_work(collectives):
    world, results = collectives
    v = values(world)
    for rank, r in enumerate(results):
        assert r["work_type"] == "Work"
        assert r["work_wait"] == [True] * 3 and r["work_completed"] == [True] * 3
        np.testing.assert_array_equal(
            r["async_all_reduce"],
            [[sum(q + k for q in range(world))] * 5 for k in range(3)])
        np.testing.assert_array_equal(r["async_all_gather"], v)
        assert r["async_barrier"] is True


def test_send_recv(collectives):
    world, results = collectives
    v = values(world)
    for rank, r in enumerate(results):
        assert r["ring_src"] == (rank - 1) % world
        np.testing.assert_array_equal(r["ring"], v[(rank - 1) % world])
    assert results[1]["pair_src"] == 0
    np.testing.assert_array_equal(results[1]["pair"], [[7.0] * 3, [8.0] * 3])


def test_argument_errors_name_what_is_wrong(collectives):
    world, results = collectives
    for r in results:
        assert r["error_list_length"].startswith(
            f"[distributed.all_gather] tensor_list has {world + 1} tensors; the group has {world} "
            "ranks")
        assert "must be contiguous" in r["error_contiguous"]


def test_blocking_calls_release_the_gil(collectives):
    _, results = collectives
    # Rank 0 waited about 1 s for rank 1 in a barrier, while another thread ticked every
    # millisecond: holding the GIL, the barrier would have stopped it.
    assert results[0]["barrier_seconds"] > 0.5
    assert results[0]["ticks_inside_barrier"] > 10


def test_without_a_group_calls_are_clear_errors():
    assert not dist.is_initialized() and dist.group.WORLD is None
    with pytest.raises(ValueError, match="init_process_group"):
        dist.all_reduce(ember.ones(2))
    with pytest.raises(ValueError, match="init_process_group"):
        dist.get_rank()
    assert "gloo" in dist.available_backends() and dist.is_available()


# --- DistributedDataParallel ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    return run_ok("ddp", 2, tmp_path_factory.mktemp("ddp"))


def replay(world):
    """The DDP run in one process: each step, every rank's gradient on its own batch, averaged."""
    ember.manual_seed(0)
    model = worker.Net()  # rank 0's start, which DDP broadcast
    start = worker.numpy_params(model)
    grads, params = [], []

    def average_gradient(step, scale=None):
        total = None
        for rank in range(world):
            x, y = worker.batch(step, rank)
            model.zero_grad()
            F.mse_loss(model(x) if scale is None else model(x, scale=scale), y).backward()
            g = worker.numpy_grads(model)
            total = g if total is None else {n: total[n] + g[n] for n in g}
        return {n: g / world for n, g in total.items()}

    for step in range(worker.STEPS):
        avg = average_gradient(step, 0.5 if step == 1 else None)
        grads.append(avg)
        with ember.no_grad():
            for n, p in model.named_parameters():
                p.sub_(ember.tensor(avg[n]) * worker.LR)
        params.append(worker.numpy_params(model))
    local = []
    for rank in range(world):  # no_sync: each rank's own gradient on batch 10
        x, y = worker.batch(10, rank)
        model.zero_grad()
        F.mse_loss(model(x), y).backward()
        local.append(worker.numpy_grads(model))
    second = average_gradient(11)
    accumulated = {n: sum(g[n] for g in local) / world + second[n] for n in second}
    return start, grads, params, local, accumulated, model.shift.numpy()


def assert_dicts_close(actual, expected, what):
    assert sorted(actual) == sorted(expected), what
    for n in expected:
        np.testing.assert_allclose(actual[n], expected[n], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{what}: {n}")


def test_ddp_wraps_a_python_module(ddp):
    for r in ddp:
        assert r["module_is_model"] and r["is_module"]
        assert r["num_buckets"] > 1
        assert r["state_dict_keys"] == ["module.fc1.bias", "module.fc1.weight", "module.fc2.bias",
                                        "module.fc2.weight", "module.shift"]
    # Seeded differently, the replicas differ before DDP and agree after its broadcast.
    before = [r["params_before"]["fc1.weight"] for r in ddp]
    assert not np.allclose(before[0], before[1])
    start, *_, shift = replay(2)
    for r in ddp:
        assert_dicts_close(r["params_start"], start, "start")
        np.testing.assert_array_equal(r["shift_start"], shift)


def test_ddp_gradients_are_the_average_and_replicas_stay_equal(ddp):
    _, grads, params, _, _, _ = replay(2)
    for step in range(worker.STEPS):
        for rank, r in enumerate(ddp):
            assert_dicts_close(r["grads"][step], grads[step], f"rank {rank} grads at step {step}")
            assert_dicts_close(r["params"][step], params[step],
                               f"rank {rank} params at step {step}")
        for n in params[step]:  # bit for bit the same on every rank
            np.testing.assert_array_equal(ddp[0]["params"][step][n], ddp[1]["params"][step][n])


def test_ddp_no_sync_accumulates_locally(ddp):
    *_, local, accumulated, _ = replay(2)
    for rank, r in enumerate(ddp):
        assert_dicts_close(r["grads_no_sync"], local[rank], f"rank {rank} inside no_sync")
        assert_dicts_close(r["grads_after_sync"], accumulated, f"rank {rank} after no_sync")
    inside = [r["grads_no_sync"]["fc2.weight"] for r in ddp]
    assert not np.allclose(inside[0], inside[1])  # no communication inside no_sync


def test_ddp_wraps_a_cpp_layer(ddp):
    # d/dW of sum(W x + b) over two rows of (rank + 1)s is 2 (rank + 1); the mean over 2 ranks is 3.
    for r in ddp:
        np.testing.assert_allclose(r["linear"]["weight_grad"], [[3.0, 3.0, 3.0]], rtol=1e-6)
        np.testing.assert_allclose(r["linear"]["bias_grad"], [2.0], rtol=1e-6)
    np.testing.assert_array_equal(ddp[0]["linear"]["weight"], ddp[1]["linear"]["weight"])


def test_ddp_needs_a_group_and_checks_devices():
    model = worker.Net()
    with pytest.raises(ValueError, match="init_process_group"):
        ember.nn.parallel.DistributedDataParallel(model)
    with pytest.raises(ValueError, match="device_ids names 2 devices"):
        ember.nn.parallel.DistributedDataParallel(model, device_ids=[0, 1])
    with pytest.raises(TypeError, match="a CPU module takes device_ids=None"):
        ember.nn.parallel.DistributedDataParallel(model, device_ids=[0])


# --- Faults --------------------------------------------------------------------------------------


def test_a_killed_peer_is_an_error_not_a_hang(tmp_path):
    start = time.monotonic()
    codes, results, outputs = run_job("killed", 2, tmp_path, deadline_s=40)
    assert codes[1] == -signal.SIGKILL
    assert codes[0] == 0, outputs[0]
    r = results[0]
    assert r["error_type"] == "DistributedError" and r["is_runtime_error"], outputs[0]
    assert "rank 1 exited" in r["message"] and "all_reduce" in r["message"], r["message"]
    assert r["seconds"] < 10  # within the group's timeout
    # The group stays failed: the next call fails at once, quoting the first failure.
    assert "unusable since an earlier operation failed" in r["later_error"]
    assert r["later_seconds"] < 1
    assert time.monotonic() - start < 30


def test_a_silent_peer_times_out(tmp_path):
    codes, results, outputs = run_job("silent", 2, tmp_path, deadline_s=40)
    assert codes == [0, 0], "\n".join(outputs)
    r = results[0]
    assert r["error_type"] == "DistributedError", outputs[0]
    assert "rank 1 did not answer" in r["message"], r["message"]
    assert 1.5 < r["seconds"] < 6  # the 2 s timeout and the diagnosis, before rank 1 leaves
