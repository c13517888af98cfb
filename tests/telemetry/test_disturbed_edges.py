"""The disturbance rule (``inproc.telemetry.disturbed``) on host counters written by hand, whose figures are known
exactly (straight lines of CPU seconds), and on readings placed exactly at each threshold: the cores it reads,
the children's time when a child's counter drops, the window it falls back to, the notes when it cannot judge,
each cause's words and numbers, and the stability rule's halves in time."""
from __future__ import annotations

import numpy as np
import pytest

from inproc.telemetry import disturbed as d
from inproc.telemetry.disturbed import Disturbance, causes, cpu_figures, judge, other_cause, stability
from inproc.telemetry.series import SampleSeries
from inproc.telemetry.trace import TelemetryTrace

T = np.arange(11.0)  # samples at 0, 1, ..., 10 s


def series(valid: dict[str, np.ndarray] | None = None, **columns: np.ndarray) -> SampleSeries:
    """A host series over ``T`` with ``columns`` (every read good, but where ``valid`` says otherwise)."""
    ok = {k: np.ones(T.size, bool) for k in columns}
    ok.update(valid or {})
    return SampleSeries(T, columns, ok, {}, {})


def host_4_cores(valid: dict[str, np.ndarray] | None = None, **more: np.ndarray) -> SampleSeries:
    """4 CPUs, 2.5 busy of which 0.25 stolen, the engine's process 1 core and its children 0.5 core: other
    processes 2.5 − 0.25 − 1.5 = 0.75 core, idle 1.5 (``more``: other columns, or these replaced)."""
    columns = dict(host_total_s=4.0 * T, host_busy_s=2.5 * T, host_steal_s=0.25 * T, process_cpu_s=1.0 * T,
                   children_cpu_s=0.5 * T)
    return series(valid, **{**columns, **more})


def trace_of(host: SampleSeries | None, absent: str | None = None, started_s: float = 0.0,
             stopped_s: float = 10.0) -> TelemetryTrace:
    return TelemetryTrace(10.0, started_s, stopped_s, 0.0, 0, (), "no GPU", host, absent)


def test_the_cores_read_are_the_counters_slopes_on_a_host_without_the_trees_cpu_columns():
    """Would fail: steal added instead of taken from the busy time, the children's time left out of the tree's,
    idle as busy − total, the steal share over busy time (0.1) instead of running time (0.25 ÷ 2.25)."""
    got = cpu_figures(host_4_cores(), 2.0, 8.0)
    assert got["window_s"] == 6.0
    assert got["host_cores"] == pytest.approx(4.0) and got["cpus_cores"] == pytest.approx(4.0)
    assert got["tree_cores"] == pytest.approx(1.5)
    assert got["other_cores"] == pytest.approx(0.75) and got["cpus_other_cores"] == pytest.approx(0.75)
    assert got["idle_cores"] == pytest.approx(1.5) and got["cpus_idle_cores"] == pytest.approx(1.5)
    assert got["steal_cores"] == pytest.approx(0.25) and got["cpus_steal_cores"] == pytest.approx(0.25)
    assert got["steal_share"] == pytest.approx(0.25 / 2.25)
    assert got["freq_share"] is None  # no frequency columns


def test_a_tree_reading_above_the_hosts_busy_time_leaves_no_negative_other_or_idle_cores():
    """The tree's counters may read a tick above the host's on a host it keeps busy: other processes are then 0
    cores, never below (would fail: the clip at 0 dropped, or clipped at 1)."""
    host = host_4_cores(host_total_s=2.0 * T, host_busy_s=2.0 * T, host_steal_s=0.0 * T, process_cpu_s=2.1 * T,
                        children_cpu_s=0.0 * T)
    got = cpu_figures(host, 0.0, 10.0)
    assert got["other_cores"] == 0.0 and got["cpus_other_cores"] == 0.0 and got["idle_cores"] == 0.0
    assert got["cpus_idle_cores"] == 0.0 and got["steal_share"] == 0.0


def test_the_trees_cpu_columns_are_read_from_two_good_samples_and_only_when_all_three_are_there():
    """The tree's 2 CPUs: 1.8 busy, 0.2 stolen. Two good samples (at 0 and 10 s) are enough to read them
    (would fail: needing 3); one column missing falls back to the whole host (would fail: any column enough)."""
    two = np.zeros(T.size, bool)
    two[[0, -1]] = True
    cols = {"tree_cpus_total_s": 2.0 * T, "tree_cpus_busy_s": 1.8 * T, "tree_cpus_steal_s": 0.2 * T}
    got = cpu_figures(host_4_cores({c: two for c in cols}, **cols), 2.0, 8.0)
    assert got["cpus_cores"] == pytest.approx(2.0) and got["cpus_steal_cores"] == pytest.approx(0.2)
    assert got["cpus_other_cores"] == pytest.approx(1.6 - 1.5) and got["cpus_idle_cores"] == pytest.approx(0.2)
    assert got["steal_share"] == pytest.approx(0.2 / 1.6)
    one = np.zeros(T.size, bool)
    one[0] = True
    got = cpu_figures(host_4_cores({"tree_cpus_total_s": one}, **cols), 2.0, 8.0)
    assert got["cpus_cores"] == pytest.approx(4.0)  # one good sample of one column: the host's
    partial = {k: v for k, v in cols.items() if k != "tree_cpus_steal_s"}
    got = cpu_figures(host_4_cores(**partial), 2.0, 8.0)
    assert got["cpus_cores"] == pytest.approx(4.0) and got["cpus_steal_cores"] == pytest.approx(0.25)


def test_a_childs_exit_drops_the_live_sum_and_only_the_increases_count():
    """Children's CPU read 0, 1, 2, then 0.5 (a child of 1.5 s exited), 1.5, ...: the increases add up
    1 + 1 + 0 + 1 + 1 ... so over [0.5, 3.5] the children used 0.5 + 1 + 0 + 0.5 = 2.0 s (would fail: drops
    counted as negative time, or the clip at another bound)."""
    kids = np.array([0.0, 1.0, 2.0, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5])
    host = series(children_cpu_s=kids)
    assert d._children_delta(host, 0.5, 3.5) == pytest.approx(2.0)
    assert d._children_delta(host, 0.0, 10.0) == pytest.approx(9.0)  # 2 up, 0 down, 7 up
    assert d._children_delta(host, 4.0, 4.0) == 0.0


def test_the_childrens_time_counts_only_where_they_were_read():
    """Read at 2 s and 6 s only (two good samples are enough; would fail: needing 3): 2 s of children's time
    between them, none before or after, and a window that ends before the first read adds nothing."""
    valid = np.zeros(T.size, bool)
    valid[[2, 6]] = True
    host = series({"children_cpu_s": valid}, children_cpu_s=0.5 * T)
    assert d._children_delta(host, 0.0, 10.0) == pytest.approx(2.0)
    assert d._children_delta(host, 4.0, 10.0) == pytest.approx(1.0)
    assert d._children_delta(host, 0.0, 1.0) == 0.0
    once = np.zeros(T.size, bool)
    once[4] = True
    assert d._children_delta(series({"children_cpu_s": once}, children_cpu_s=0.5 * T), 0.0, 10.0) == 0.0


def test_a_window_of_one_second_is_judged_itself_and_a_shorter_one_over_the_whole_entry():
    """Would fail: ``<=`` for ``<`` at MIN_WINDOW_S (1 s), or the entry's span taken the other way round."""
    trace = trace_of(host_4_cores(), started_s=1.0, stopped_s=9.0)
    assert judge(trace, 2.0, 3.0).window_s == 1.0
    assert judge(trace, 2.0, 2.5).window_s == 8.0


def test_what_cannot_be_judged_is_said_and_no_figure_is_made_up():
    """The notes in their words: no host series (with its reason, or "not sampled"), old files lacking the
    rule's columns (each named), a counter that went back."""
    got = judge(trace_of(None, "psutil is not installed"), 0.0, 5.0)
    assert got.not_judged == ("host telemetry absent: psutil is not installed",) and got.host_cores is None
    assert judge(trace_of(None), 0.0, 5.0).not_judged == ("host telemetry absent: not sampled",)
    old = series(host_total_s=4.0 * T, host_busy_s=2.5 * T, process_cpu_s=1.0 * T)
    assert judge(trace_of(old), 0.0, 5.0).not_judged == (
        "host samples lack children_cpu_s, host_steal_s (written before the rule)",)
    back = 2.5 * T
    back[5] = 0.0
    got = judge(trace_of(host_4_cores(host_busy_s=back)), 0.0, 10.0)
    assert got.not_judged == ("host CPU: host_busy_s went back between samples at 4.000 s and 5.000 s",)
    assert all(getattr(got, k) is None for k in d.CPU_FIGURES) and got.causes == ()


def test_a_window_whose_counters_did_not_move_is_not_judged():
    frozen = host_4_cores(host_total_s=0.0 * T, host_busy_s=0.0 * T, host_steal_s=0.0 * T, process_cpu_s=0.0 * T,
                          children_cpu_s=0.0 * T)
    assert judge(trace_of(frozen), 0.0, 10.0).not_judged == ("host CPU: host CPU time did not advance over the window",)
    with pytest.raises(d.m.Absent, match=r"empty window 3\.000-3\.000 s"):
        cpu_figures(host_4_cores(), 3.0, 3.0)


def test_the_judged_host_names_other_processes_with_their_share():
    """The hand-made host: 0.75 other core of 4, 1.5 idle (a core to spare on the tree's CPUs), and 0.75 ≥ a tenth
    of 4: flagged as a share of the host, in words; the steal (0.25 of 2.25 running) beside it."""
    got = judge(trace_of(host_4_cores()), 0.0, 10.0)
    assert got.causes[0] == "other processes used 0.75 cores of 4 (19 %) during the window"
    assert got.causes[1] == "the hypervisor took 11.1 % of the engine's CPU time (steal, 0.25 cores) during the window"
    assert len(got.causes) == 2


@pytest.mark.parametrize("host, where", [(4.4, ""), (4.5, " on the engine's CPUs")])
def test_the_engines_cpus_are_named_when_they_are_half_a_core_or_more_fewer_than_the_hosts(host, where):
    """Would fail: ``<=`` for ``<`` at the half core."""
    got = other_cause(Disturbance(host_cores=host, other_cores=0.3, idle_cores=2.0, cpus_cores=4.0,
                                  cpus_other_cores=0.3, cpus_idle_cores=0.2))
    assert got == f"other processes used 0.30 cores of 4{where} (8 %) during the window"


def test_other_processes_on_the_host_are_named_from_a_tenth_of_it():
    """6.4 of 64 cores (the tree's CPUs idle): "(10 %)"; the quarter-core floor holds on a small host (0.24 of 2
    is over a tenth, not flagged; 0.25 is)."""
    big = Disturbance(host_cores=64.0, other_cores=6.4, idle_cores=40.0, cpus_cores=4.0, cpus_other_cores=0.0,
                      cpus_idle_cores=3.0)
    assert other_cause(big) == "other processes used 6.40 cores of 64 (10 %) during the window"
    small = Disturbance(host_cores=2.0, other_cores=0.24, idle_cores=1.0)
    assert other_cause(small) == ""
    assert other_cause(Disturbance(host_cores=2.0, other_cores=0.25, idle_cores=1.0)) == (
        "other processes used 0.25 cores of 2 (12 %) during the window")


def test_the_steal_cause_states_the_steady_share_only_when_there_is_one():
    """Would fail: the steady note on a steady share of 0, its value unscaled, the cores of the host's steal."""
    got = causes(Disturbance(steal_share=0.08, cpus_steal_cores=0.16, steal_cores=0.5, steady_steal_share=0.02))
    assert got == ("the hypervisor took 8.0 % of the engine's CPU time (steal, 0.16 cores) against the run's "
                   "steady 2.0 % during the window",)
    got = causes(Disturbance(steal_share=0.08, cpus_steal_cores=0.16, steady_steal_share=0.0))
    assert got == ("the hypervisor took 8.0 % of the engine's CPU time (steal, 0.16 cores) during the window",)


@pytest.mark.parametrize("idle, flagged", [(4.0, True), (4.01, False)])
def test_frequency_counts_from_exactly_half_the_host_busy(idle, flagged):
    """8 CPUs, 4 idle: half busy, judged (would fail: ``>`` for ``>=`` at FREQ_BUSY_SHARE)."""
    got = causes(Disturbance(host_cores=8.0, idle_cores=idle, freq_share=0.49))
    assert got == (("the CPUs ran at 49 % of their maximum frequency",) if flagged else ())


def test_frequency_is_not_judged_when_the_idle_cores_were_not_read():
    assert causes(Disturbance(host_cores=8.0, freq_share=0.1)) == ()


# The level change at each edge, alone and beside another cause (a steal of 10 %, flagged by itself).
STEAL = dict(steal_share=0.10, cpus_steal_cores=0.1)


@pytest.mark.parametrize("ratio, beside, said", [
    (1.5, True, "step time rose 1.5× in its second half"),  # at the named edge: named (>=)
    (1.49, True, None),
    (0.5, True, "step time fell 2.0× in its second half"),  # a fall of 2x is named as its size, not 0.5
    (3.0, False, "step time rose 3.0× in its second half"),  # at the lone edge
    (2.99, False, None),
    (0.25, False, "step time fell 4.0× in its second half"),
    (0.4, False, None),  # a fall of 2.5x alone is not enough
])
def test_a_level_change_is_named_from_its_edge_in_either_direction(ratio, beside, said):
    got = causes(Disturbance(half_ratio=ratio, **(STEAL if beside else {})))
    level = [c for c in got if c.startswith("step time")]
    assert level == ([said] if said else [])
    assert len(got) == int(beside) + int(said is not None)


@pytest.mark.parametrize("stretch, steps, said", [
    (8, 40, "8 steps in a row (20 % of the window) took over 3× its median"),  # both edges at once
    (7, 10, None),  # 70 % of the window but under 8 steps
    (20, 101, None),  # 8 steps or more but under 20 % (20.2)
    (21, 101, "21 steps in a row (21 % of the window) took over 3× its median"),
])
def test_a_slow_stretch_needs_eight_steps_and_a_fifth_of_the_window(stretch, steps, said):
    assert causes(Disturbance(stretch_steps=stretch, window_steps=steps)) == ((said,) if said else ())


def test_every_other_gpu_process_is_named():
    got = causes(Disturbance(gpu_others=("GPU 0: pid 1 (10 MiB)", "GPU 1: pid 2 (20 MiB)")))
    assert got == ("other processes held the GPU: GPU 0: pid 1 (10 MiB), GPU 1: pid 2 (20 MiB)",)


def test_the_halves_split_at_the_windows_middle_in_time_a_step_ending_on_it_in_the_first():
    """8 equal steps back to back end at 1..8 from 0: the middle is 4, so 4 steps a half, enough for a level
    (would fail: ``>=`` for ``>`` at the middle, leaving 3 in the first half; a half of 4 steps not enough);
    7 steps leave 3 in the first half: no level."""
    assert stability(np.ones(8)) == {"half_ratio": 1.0, "stretch_steps": 0, "window_steps": 8}
    assert stability(np.ones(7))["half_ratio"] is None


def test_the_halves_are_halves_in_time_of_the_steps_given_ends():
    """Five steps of 1 s, five of 2 s, five of 4 s. Back to back (ends 1..35) the middle is 17.5: the 4 s steps
    against the rest, 4 ÷ 1.5 = 2.67, not flagged alone. Ended as given (the first five by 5 s, then a pause, the
    others at 102..130) the middle is 65: the 2 s and 4 s steps (median 3) against the 1 s ones, 3.0, flagged
    alone (would fail: the given ends dropped, in ``stability`` or on their way from ``judge``)."""
    steps = np.r_[np.ones(5), np.full(5, 2.0), np.full(5, 4.0)]
    assert stability(steps)["half_ratio"] == pytest.approx(4 / 1.5)
    ends = np.r_[np.arange(1.0, 6.0), np.arange(102.0, 111.0, 2.0), np.arange(114.0, 131.0, 4.0)]
    assert stability(steps, ends)["half_ratio"] == 3.0
    quiet = trace_of(host_4_cores(host_busy_s=1.5 * T, host_steal_s=0.0 * T))  # the tree's 1.5 cores, no other
    assert judge(quiet, 0.0, 10.0, steps).causes == ()
    assert judge(quiet, 0.0, 10.0, steps, ends).causes == ("step time rose 3.0× in its second half",)


def test_a_step_exactly_three_times_the_median_is_not_slow():
    """Steps of 1 s with a stretch of 3 s steps: at exactly 3× the median none is above it (would fail: ``>=``
    for ``>``); at 3.5 s the stretch of 10 counts."""
    at = np.r_[np.ones(20), np.full(10, 3.0), np.ones(10)]
    assert stability(at)["stretch_steps"] == 0
    above = np.r_[np.ones(20), np.full(10, 3.5), np.ones(10)]
    assert stability(above)["stretch_steps"] == 10 and stability(above)["window_steps"] == 40


def test_the_window_begins_where_its_first_step_began():
    """Steps of 2 s and 4 s in turn, back to back from 1,000 s (perf_counter's origin is arbitrary): the window is
    1,000-1,024 s, its middle 1,012 s, so 4 steps a half and medians of 3 s each (would fail: the window begun at
    another step's start or end, or its middle at the mean of the ends' absolute times)."""
    steps = np.array([2.0, 4.0] * 4)
    assert stability(steps, 1000 + np.cumsum(steps))["half_ratio"] == 1.0


def test_a_window_of_one_step_is_read_and_has_no_halves():
    """One step is a window of one step, with no slow stretch (would fail: one step taken for no steps)."""
    assert stability(np.array([0.02])) == {"half_ratio": None, "stretch_steps": 0, "window_steps": 1}
    assert stability(np.array([])) == {"half_ratio": None, "stretch_steps": None, "window_steps": None}


def test_a_first_half_of_steps_timed_at_zero_gives_no_ratio():
    """A clock that did not advance over the first half's steps (0 s each): no ratio, not a division by 0."""
    got = stability(np.r_[np.zeros(4), np.ones(4)], np.array([1.0, 2, 3, 4, 11, 12, 13, 14]))
    assert got["half_ratio"] is None and got["window_steps"] == 8


def test_a_one_cpu_host_is_judged():
    """A host of one CPU advances its counters by 1 s a second (would fail: a total of one core taken for one that
    did not advance)."""
    host = host_4_cores(host_total_s=1.0 * T, host_busy_s=0.9 * T, host_steal_s=0.0 * T, process_cpu_s=0.5 * T,
                        children_cpu_s=0.0 * T)
    got = judge(trace_of(host), 0.0, 10.0)
    assert got.not_judged == () and got.host_cores == pytest.approx(1.0)
    assert got.other_cores == pytest.approx(0.4) and got.idle_cores == pytest.approx(0.1)
    assert got.causes == ("other processes used 0.40 cores of 1 (40 %) during the window",)


@pytest.mark.parametrize("reading, said", [
    # Percentages whose rounding a 1 % error in the scale would move: 49.3 % prints 49, 49.8 % would print 50.
    (Disturbance(host_cores=2.0, other_cores=0.986, idle_cores=0.0, cpus_cores=2.0, cpus_other_cores=0.986,
                 cpus_idle_cores=0.0), "other processes used 0.99 cores of 2 (49 %) during the window"),
    (Disturbance(host_cores=8.0, idle_cores=2.0, freq_share=0.493), "the CPUs ran at 49 % of their maximum frequency"),
    (Disturbance(stretch_steps=25, window_steps=51), "25 steps in a row (49 % of the window) took over 3× its median"),
    (Disturbance(steal_share=0.2, cpus_steal_cores=0.2, steady_steal_share=0.1),
     "the hypervisor took 20.0 % of the engine's CPU time (steal, 0.20 cores) against the run's steady 10.0 % during "
     "the window"),
])
def test_each_causes_percentage_is_its_share_times_a_hundred(reading, said):
    assert causes(reading) == (said,)


def test_the_readings_json_has_exactly_its_fields_with_lists_for_its_tuples():
    """The results file holds each field once under its own name (no key beside it), tuples written as lists."""
    got = judge(trace_of(host_4_cores()), 0.0, 10.0)
    out = got.to_dict()
    assert set(out) == set(Disturbance.__dataclass_fields__)
    assert out["causes"] == list(got.causes) and isinstance(out["causes"], list) and len(out["causes"]) == 2
    assert isinstance(out["gpu_others"], list) and isinstance(out["not_judged"], list)
