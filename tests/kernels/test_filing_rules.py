"""The filing rule's edges on small traces whose rows are worked out by hand: a launch at a mark's very end, two
activities of one name in a step, and the CPU rule's nesting (a child ending with its parent, two events starting
together, overlapping events, another thread, annotations between operators, a dispatcher calling itself)."""
from __future__ import annotations

from inproc.kernels.chrome import events_of
from inproc.kernels.filing import MARK, file_events, unfiled_words


def _x(cat, name, ts, dur, corr=None, tid=1, pid=1):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {}}
    if corr is not None:
        e["args"]["correlation"] = corr
    return e


def rows(*events, mark=MARK):
    """{(step, name): (calls, ns)} of the filed table."""
    t = file_events(events_of({"traceEvents": list(events)}), mark).table
    return {(int(s), n): (int(c), int(ns)) for s, n, c, ns in zip(t.step, t.name, t.calls, t.device_ns)}


def test_a_launch_at_the_marks_last_nanosecond_is_filed_and_one_at_its_end_is_not():
    """A mark holds [start, end): a launch at 9.999 µs of a 10 µs mark is in it, one at 10.000 is outside
    (``<=`` for ``<`` files it)."""
    mark = _x("user_annotation", MARK, "0.000", "10.000")
    for at, filed in (("9.999", 1), ("10.000", 0)):
        f = file_events(events_of({"traceEvents": [
            mark, _x("cuda_runtime", "cudaLaunchKernel", at, "0.500", 3), _x("kernel", "k", "30.000", "1.000", 3, pid=0)]}))
        assert (f.filed, f.unfiled_outside, f.unfiled_no_launcher) == (filed, 1 - filed, 0)


def test_two_activities_of_one_name_in_a_step_add_their_device_time():
    """1.0 + 2.5 µs in two calls (keeping the last one's time gives 2500)."""
    got = rows(_x("user_annotation", MARK, "0.000", "10.000"),
               _x("cuda_runtime", "cudaLaunchKernel", "1.000", "0.500", 1), _x("kernel", "k", "20.000", "1.000", 1, pid=0),
               _x("cuda_runtime", "cudaLaunchKernel", "2.000", "0.500", 2), _x("kernel", "k", "22.000", "2.500", 2, pid=0))
    assert got == {(0, "k"): (2, 3500)}


def test_an_operators_self_time_looks_through_annotations_and_two_calls_add_up():
    """aten::linear [0, 10] holds an annotation [1, 9] holding aten::mm [2, 5] and aten::mm [6, 8]: linear's
    own time is 10 − 3 − 2 = 5 µs, mm's is 5 µs in two calls; the annotation is no row. A second linear [12, 14]
    with nothing inside adds 2 µs and a call."""
    got = rows(_x("user_annotation", MARK, "0.000", "20.000"),
               _x("cpu_op", "aten::linear", "0.000", "10.000"), _x("user_annotation", "block", "1.000", "8.000"),
               _x("cpu_op", "aten::mm", "2.000", "3.000"), _x("cpu_op", "aten::mm", "6.000", "2.000"),
               _x("cpu_op", "aten::linear", "12.000", "2.000"))
    assert got == {(0, "aten::linear"): (2, 7000), (0, "aten::mm"): (2, 5000)}


def test_a_child_ending_with_its_parent_or_starting_with_it_is_inside_it():
    """Inside aten::linear [0, 10]: aten::mul [0, 4] starts with it (sorted after it, the longer first) and
    aten::add [4, 10] ends with it. Both are its children and tile it: linear keeps 0 µs of its own (either
    taken for a sibling leaves it 4 or 6)."""
    got = rows(_x("user_annotation", MARK, "0.000", "20.000"),
               _x("cpu_op", "aten::linear", "0.000", "10.000"), _x("cpu_op", "aten::mul", "0.000", "4.000"),
               _x("cpu_op", "aten::add", "4.000", "6.000"))
    assert got == {(0, "aten::linear"): (1, 0), (0, "aten::mul"): (1, 4000), (0, "aten::add"): (1, 6000)}


def test_overlapping_events_and_other_threads_are_not_nested():
    """aten::a [0, 10] and aten::b [5, 15] overlap on one thread: neither is inside the other, each keeps its
    10 µs. aten::c [2, 4] on another thread keeps its 2 µs and takes nothing from aten::a."""
    got = rows(_x("user_annotation", MARK, "0.000", "20.000"),
               _x("cpu_op", "aten::a", "0.000", "10.000"), _x("cpu_op", "aten::b", "5.000", "10.000"),
               _x("cpu_op", "aten::c", "2.000", "2.000", tid=2))
    assert got == {(0, "aten::a"): (1, 10000), (0, "aten::b"): (1, 10000), (0, "aten::c"): (1, 2000)}


def test_an_event_starting_where_another_ends_is_its_sibling():
    """A zero-length aten::add at 5 µs, the end of aten::add [0, 5]: two calls, not a dispatcher's one."""
    got = rows(_x("user_annotation", MARK, "0.000", "20.000"),
               _x("cpu_op", "aten::add", "0.000", "5.000"), _x("cpu_op", "aten::add", "5.000", "0.000"))
    assert got == {(0, "aten::add"): (2, 5000)}


def test_an_operator_calling_itself_once_is_one_call_and_twice_is_three():
    """aten::linear [0, 10] whose only child is aten::linear [1, 9] holding aten::mm [2, 8]: one linear call of
    10 − 6 = 4 µs (not two of 2 µs). With two inner linears [1, 4] and [5, 9] nothing merges: three calls."""
    one = rows(_x("user_annotation", MARK, "0.000", "20.000"),
               _x("cpu_op", "aten::linear", "0.000", "10.000"), _x("cpu_op", "aten::linear", "1.000", "8.000"),
               _x("cpu_op", "aten::mm", "2.000", "6.000"))
    assert one == {(0, "aten::linear"): (1, 4000), (0, "aten::mm"): (1, 6000)}
    two = rows(_x("user_annotation", MARK, "0.000", "20.000"),
               _x("cpu_op", "aten::linear", "0.000", "10.000"), _x("cpu_op", "aten::linear", "1.000", "3.000"),
               _x("cpu_op", "aten::linear", "5.000", "4.000"))
    assert two == {(0, "aten::linear"): (3, 10000)}


def test_the_unfiled_activities_are_counted_in_words_with_their_device_time():
    """The count of the whole (filed ones unknown: none), the reason only when given, and the device time to three
    figures (1.235 ms rounds up: a divisor of 1000001 for 1e6 would print 1.23)."""
    assert unfiled_words(10, 2, 1_235_000) == "2 of 12 device activities not filed to a step (1.24 ms of device time)"
    assert unfiled_words(None, 3, None) == "3 of 3 device activities not filed to a step (0 ms of device time)"
    assert unfiled_words(4, 1, 500_000, "1 launched outside every step mark") == (
        "1 of 5 device activities not filed to a step (1 launched outside every step mark; 0.5 ms of device time)")
    assert unfiled_words(5, 0, 0) == "" and unfiled_words(5, None, None) == ""
