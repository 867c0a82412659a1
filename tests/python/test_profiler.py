"""ember.profiler: what runs inside a profile is counted by name, nested by thread, exported as a
Chrome trace and tabulated; record_function ranges and schedules. Structure is asserted, never
durations (ARCHITECTURE.md, "The profiler")."""

import json
import threading

import pytest

import ember
from ember.profiler import ProfilerAction, profile, record_function, schedule


def by_name(events, name):
    return [e for e in events if e.name == name]


def test_ops_run_inside_a_profile_are_counted():
    a, b = ember.randn(4, 4), ember.randn(4, 4)
    ember.matmul(a, b)  # outside: not recorded
    with profile() as prof:
        for _ in range(3):
            ember.add(a, b)
        for _ in range(2):
            ember.matmul(a, b)
        a * 2.0
    ember.add(a, b)  # after: not recorded
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["add"].count == 3 and rows["matmul"].count == 2 and rows["mul"].count == 1
    assert rows["cpu::add"].count == 3 and rows["cpu::add"].category == "kernel"
    assert rows["add"].category == "cpu_op"
    assert "sub" not in rows
    for r in rows.values():
        assert r.cpu_time_total >= r.self_cpu_time_total >= 0
        assert r.cpu_time == pytest.approx(r.cpu_time_total / r.count)
    events = prof.events()
    assert len(by_name(events, "add")) == 3
    assert all(e.thread == threading.get_native_id() for e in events)
    assert [e.start_us for e in events] == sorted(e.start_us for e in events)
    add = by_name(events, "add")[0]
    assert add.input_shapes == [[4, 4], [4, 4]] and add.dtype == ember.float32
    assert add.device == ember.device("cpu") and add.count == 1
    assert add.cpu_time_total == pytest.approx(add.end_us - add.start_us)


def test_kernels_nest_in_their_ops_and_ops_in_record_function_ranges():
    x = ember.randn(3, 5)
    with profile() as prof:
        with record_function("outer"):
            with record_function("inner"):
                ember.relu(x)
            ember.neg(x)
    events = prof.events()
    (outer,), (inner,) = by_name(events, "outer"), by_name(events, "inner")
    (relu,), (neg,) = by_name(events, "relu"), by_name(events, "neg")
    assert outer.category == inner.category == "user_annotation"
    assert outer.cpu_parent is None
    assert inner.cpu_parent.name == "outer" and relu.cpu_parent.name == "inner"
    assert neg.cpu_parent.name == "outer"
    assert [c.name for c in outer.cpu_children] == ["inner", "neg"]
    assert [c.name for c in relu.cpu_children] == ["cpu::relu"]
    assert outer.start_us <= inner.start_us <= relu.start_us <= relu.end_us <= inner.end_us
    assert inner.end_us <= neg.start_us and neg.end_us <= outer.end_us
    assert outer.self_cpu_time_total <= outer.cpu_time_total


def test_backward_nodes_are_recorded_with_their_forward_op():
    w = ember.randn(4, requires_grad=True)
    with profile() as prof:
        (w * w).sum().backward()
    (node,) = by_name(prof.events(), "MulBackward")
    assert node.category == "backward" and node.forward_op == "mul"


def test_record_function_as_a_decorator_nests_recursive_calls():
    @record_function("fact")
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    with profile() as prof:
        assert fact(4) == 24
    ranges = by_name(prof.events(), "fact")
    assert len(ranges) == 4
    depth = [0]
    for e in ranges:
        d, p = 0, e.cpu_parent
        while p is not None:
            d, p = d + 1, p.cpu_parent
        depth.append(d)
    assert sorted(depth[1:]) == [0, 1, 2, 3]
    assert {r.key: r.count for r in prof.key_averages()}["fact"] == 4


def test_record_function_outside_a_profile_does_nothing():
    assert not ember.profiler.is_enabled()
    with record_function("idle") as r:
        assert r.name == "idle"
    with profile() as prof:
        assert ember.profiler.is_enabled()
    assert not ember.profiler.is_enabled()
    assert by_name(prof.events(), "idle") == []


def test_other_threads_are_recorded_with_their_ids():
    x = ember.randn(8)
    ids = []

    def work():
        ids.append(threading.get_native_id())
        with record_function("in_thread"):
            ember.exp(x)

    with profile() as prof:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        ember.exp(x)
    (ranged,) = by_name(prof.events(), "in_thread")
    exps = by_name(prof.events(), "exp")
    assert ranged.thread == ids[0] != threading.get_native_id()
    assert sorted(e.thread for e in exps) == sorted([ids[0], threading.get_native_id()])
    (inside,) = [e for e in exps if e.cpu_parent is not None]
    assert inside.cpu_parent.name == "in_thread" and inside.thread == ids[0]


def test_the_chrome_trace_is_json_with_the_ranges(tmp_path):
    with profile() as prof:
        with record_function("step"):
            ember.add(ember.ones(3), ember.ones(3))
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    complete = [e for e in events if e.get("ph") == "X"]
    names = {e["name"] for e in complete}
    assert {"step", "add", "cpu::add"} <= names
    (step,) = [e for e in complete if e["name"] == "step"]
    (add,) = [e for e in complete if e["name"] == "add"]
    assert step["cat"] == "user_annotation" and add["cat"] == "cpu_op"
    assert step["ts"] <= add["ts"] and add["ts"] + add["dur"] <= step["ts"] + step["dur"] + 1e-3
    assert step["tid"] == add["tid"]


def test_the_table_sorts_and_limits_rows():
    a = ember.ones(2)
    with profile() as prof:
        for _ in range(5):
            ember.neg(a)
        ember.exp(a)
    averages = prof.key_averages()
    table = averages.table(sort_by="count", row_limit=2)
    lines = [ln for ln in table.splitlines() if ln.strip() and not ln.startswith("-")]
    assert lines[0].split()[0] == "Name"
    rows = [ln.split()[0] for ln in lines[1:] if not ln.startswith("Self CPU time total")]
    assert len(rows) == 2 and set(rows) == {"neg", "cpu::neg"}
    assert "exp" in averages.table(sort_by="count")
    assert str(averages) == averages.table()
    for key in ("cpu_time_total", "self_cpu_time_total", "cuda_time_total", "self_cuda_time_total",
                "count", "self_cpu_memory_usage", "device_time_total"):
        assert "neg" in averages.table(sort_by=key)
    with pytest.raises(ValueError, match="sort_by"):
        averages.table(sort_by="nonsense")


def test_key_averages_grouped_by_input_shape():
    with profile(record_shapes=True) as prof:
        ember.add(ember.ones(2, 3), ember.ones(2, 3))
        ember.add(ember.ones(2, 3), ember.ones(2, 3))
        ember.add(ember.ones(4), ember.ones(4))
    rows = [r for r in prof.key_averages(group_by_input_shape=True) if r.key == "add"]
    assert sorted((r.input_shapes, r.count) for r in rows) == [([[2, 3], [2, 3]], 2), ([[4], [4]], 1)]
    assert [r.count for r in prof.key_averages() if r.key == "add"] == [3]


def test_profile_memory_counts_the_bytes_of_an_op():
    a = ember.ones(1000)
    with profile(profile_memory=True) as prof:
        kept = a + 1.0  # noqa: F841 (its storage stays allocated)
    (row,) = [r for r in prof.key_averages() if r.key == "add"]
    assert row.self_cpu_memory_usage + sum(
        r.self_cpu_memory_usage for r in prof.key_averages() if r.key == "cpu::add") >= 4000
    assert row.cpu_memory_usage >= 4000
    with profile(profile_memory=False, record_shapes=False) as quiet:
        kept = a + 1.0  # noqa: F841
    (row,) = [r for r in quiet.key_averages() if r.key == "add"]
    assert row.cpu_memory_usage == 0
    assert by_name(quiet.events(), "add")[0].input_shapes == []


def test_a_schedule_records_the_active_steps_and_hands_over_each_cycle():
    traces = []

    def ready(p):
        traces.append(sorted({e.name for e in p.events() if e.name.startswith("ProfilerStep#")}))

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=ready) as prof:
        for _ in range(9):
            ember.neg(ember.ones(1))
            prof.step()
    assert traces == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    s = schedule(wait=1, warmup=1, active=2, skip_first=1)
    assert [s(i) for i in range(6)] == [
        ProfilerAction.NONE, ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE]


def test_one_profile_at_a_time_and_unsupported_options():
    with profile():
        with pytest.raises(ValueError):
            with profile():
                pass
    with pytest.warns(UserWarning, match="with_stack"):
        profile(with_stack=True)
    with profile() as prof:
        with pytest.raises(ValueError):
            prof.events()  # still recording
