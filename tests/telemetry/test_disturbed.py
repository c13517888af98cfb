"""The disturbance rule's thresholds, on simulated host samples and step times whose truth is known
(``tests.sim.host``), and on hand-made readings at each threshold's edge."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from inproc.telemetry import disturbed as d
from inproc.telemetry.disturbed import Disturbance, causes, judge, stability
from inproc.telemetry.trace import TelemetryTrace
from tests.sim.host import QUIET_STEAL, HostSim, simulate


def run(s: HostSim, seed: int = 0) -> Disturbance:
    trace, t0, t1, steps = simulate(s, np.random.default_rng(seed))
    return judge(trace, t0, t1, steps)


def test_a_quiet_window_is_not_disturbed_and_its_figures_are_the_truth():
    got = run(HostSim(window_s=10.0))
    assert got.reason == ""
    assert got.host_cores == pytest.approx(2.0, abs=0.01)
    assert got.tree_cores == pytest.approx(1.0, abs=0.05)
    assert got.other_cores < 0.1
    assert got.steal_cores == pytest.approx(0.0, abs=0.01)


def test_a_burner_through_the_window_is_named_with_its_cores():
    got = run(HostSim(window_s=10.0, burner_cores=0.9))
    assert got.other_cores == pytest.approx(0.93, abs=0.08)
    assert got.reason.startswith("disturbed: other processes used 0.9")
    assert "cores of 2 (4" in got.reason and "during the window" in got.reason


def test_a_burner_in_the_second_half_names_the_step_time_rise_beside_the_cpu():
    got = run(HostSim(window_s=10.0, burner_cores=1.0, burner_from=0.5, burner_slows=3.0))
    assert got.causes[0].startswith("other processes used")
    assert any(c.startswith("step time rose") for c in got.causes), got.causes
    assert got.half_ratio == pytest.approx(3.0, rel=0.2)


def test_workers_cpu_is_this_trees_not_other_processes():
    trace, t0, t1, steps = simulate(HostSim(window_s=10.0, burner_cores=0.8), np.random.default_rng(1))
    host = trace.host
    # The same CPU, now counted as a worker's: the children's counter grows by the burner's share.
    kids = np.where(host.ok["children_cpu_s"], host.t_s * 0.8, np.nan)
    values = {**host.values, "children_cpu_s": kids}
    as_worker = TelemetryTrace(**{**trace.__dict__, "host": replace(host, values=values)})
    got = judge(as_worker, t0, t1, steps)
    assert got.reason == "" and got.tree_cores == pytest.approx(1.8, abs=0.1)


def test_steal_is_told_apart_from_other_processes_and_read_as_a_share_of_the_running_time():
    got = run(HostSim(window_s=10.0, steal_cores=0.3))
    assert got.steal_cores == pytest.approx(0.3, abs=0.02) and got.cpus_steal_cores == got.steal_cores
    assert got.other_cores < d.MIN_OTHER_CORES
    # The sim's running time is the tree's 1 core and its daemons' 0.03: 0.3 of about 1.03 cores.
    assert got.steal_share == pytest.approx(0.3 / 1.03, abs=0.02)
    assert got.causes == (f"the hypervisor took {100 * got.steal_share:.1f} % of the engine's CPU time "
                          f"(steal, 0.30 cores) during the window",)


# Steal shares at the threshold's edge: a share s with steady share s0 slows the steps by (1 + s)/(1 + s0) − 1,
# flagged from 5 % (compare's default threshold). The values are written out, not computed from the module.
@pytest.mark.parametrize("share, steady, flagged", [
    (0.0499, None, False),  # just under 5 %, nothing measured before the run
    (0.0501, None, True),  # just over
    (0.0500, 0.0, True),  # at it as written: 1.05 − 1 is 0.05000000000000004 in floats, over
    (0.0709, 0.02, False),  # 1.0709 / 1.02 = 1.0499: under, beyond a steady 2 %
    (0.0711, 0.02, True),  # 1.0711 / 1.02 = 1.0501
    (0.2000, 0.20, False),  # a steady 20 % is the run's level, said once as its note
    (0.0, 0.30, False),  # less than the steady share: not a disturbance either
])
def test_steal_threshold_is_what_moves_the_headline_by_five_percent_beyond_the_steady_share(share, steady, flagged):
    got = causes(Disturbance(steal_share=share, cpus_steal_cores=0.1, steady_steal_share=steady))
    assert bool(got) is flagged, got
    assert not got or ("against the run's steady 2.0 %" in got[0]) is (steady == 0.02)


def test_the_steal_threshold_is_compares_default_threshold():
    from inproc.compare.verdicts import CompareSettings
    assert d.STEAL_MOVE == CompareSettings().threshold


def test_a_quiet_runs_steady_steal_in_the_trace_excuses_the_same_steal_in_its_cells():
    trace, t0, t1, steps = simulate(HostSim(window_s=10.0, steal_cores=0.1), np.random.default_rng(5))
    alone = judge(trace, t0, t1, steps)
    assert alone.steal_share > 0.09 and alone.causes[0].startswith("the hypervisor took")
    steady = TelemetryTrace(**{**trace.__dict__, "steady_steal_share": 0.09})
    assert judge(steady, t0, t1, steps).causes == ()
    assert TelemetryTrace.from_dict(steady.to_dict()).steady_steal_share == 0.09


@pytest.mark.parametrize("other, idle, host, flagged", [
    (d.MIN_OTHER_CORES, 0.4, 2.0, True),  # at the threshold, no spare core
    (d.MIN_OTHER_CORES - 0.01, 0.0, 2.0, False),  # under it, whatever the idle
    (0.3, 10.0, 64.0, False),  # a quarter core on a big idle host: spare cores
    (7.0, 20.0, 64.0, True),  # a tenth of a big host's CPUs: shares its caches and memory
])
def test_other_cpu_threshold(other, idle, host, flagged):
    got = causes(Disturbance(host_cores=host, other_cores=other, idle_cores=idle, cpus_cores=host,
                             cpus_other_cores=other, cpus_idle_cores=idle))
    assert bool(got) is flagged


# The tree's 4 CPUs of a 64-CPU host: other work competes there when it takes a quarter core and leaves less than
# half a core idle; elsewhere it counts from a tenth of the host. Values at each edge, written out.
@pytest.mark.parametrize("on_cpus, idle_cpus, on_host, flagged", [
    (0.25, 0.49, 0.25, True),  # at the other-CPU edge, under the idle edge
    (0.2499, 0.0, 0.2499, False),
    (0.30, 0.50, 0.30, False),  # idle exactly half a core: a core to spare
    (0.0, 3.0, 6.4, True),  # 10 % of the host, on other CPUs: caches and memory
    (0.0, 3.0, 6.39, False),
])
def test_other_cpu_is_judged_on_the_trees_cpus(on_cpus, idle_cpus, on_host, flagged):
    got = causes(Disturbance(host_cores=64.0, other_cores=on_host, idle_cores=40.0, cpus_cores=4.0,
                             cpus_other_cores=on_cpus, cpus_idle_cores=idle_cpus))
    assert bool(got) is flagged, got
    assert not got or ("on the engine's CPUs" in got[0]) is (on_cpus > 0)


def test_a_file_without_the_trees_cpu_columns_is_judged_on_all_cpus():
    trace, t0, t1, steps = simulate(HostSim(window_s=5.0, burner_cores=0.9), np.random.default_rng(6))
    values = {k: v for k, v in trace.host.values.items() if k not in d.TREE_CPUS}
    old = TelemetryTrace(**{**trace.__dict__, "host": replace(trace.host, values=values)})
    got = judge(old, t0, t1, steps)
    assert got.cpus_cores == got.host_cores and got.cpus_other_cores == pytest.approx(got.other_cores, abs=0.02)
    assert got.causes[0].startswith("other processes used 0.9")


def test_frequency_is_judged_only_on_a_busy_host():
    slow = Disturbance(host_cores=8.0, other_cores=0.0, idle_cores=2.0, freq_share=0.4)
    assert causes(slow) == ("the CPUs ran at 40 % of their maximum frequency",)
    assert causes(replace(slow, idle_cores=6.0)) == ()  # mostly idle: idle CPUs park low
    assert causes(replace(slow, freq_share=d.MIN_FREQ_SHARE)) == ()


def test_a_level_change_alone_flags_only_from_three_times():
    steps = np.r_[np.full(50, 0.010), np.full(50, 0.022)]
    assert stability(steps)["half_ratio"] == pytest.approx(2.2)
    assert causes(Disturbance(**stability(steps))) == ()  # a quiet vLLM cell moved 2.2x
    fell = np.r_[np.full(50, 0.031), np.full(50, 0.010)]
    assert causes(Disturbance(**stability(fell))) == ("step time fell 3.1× in its second half",)


def test_a_stretch_of_slow_steps_flags_a_lone_prefill_does_not():
    base = np.full(100, 0.010)
    lone = base.copy()
    lone[40:42] = 0.1
    assert causes(Disturbance(**stability(lone))) == ()
    stretch = base.copy()
    stretch[30:55] = 0.05
    assert causes(Disturbance(**stability(stretch))) == ("25 steps in a row (25 % of the window) took over 3× its median",)


def test_a_short_window_is_judged_over_the_whole_entry():
    trace, t0, t1, steps = simulate(HostSim(window_s=5.0, burner_cores=0.9), np.random.default_rng(2))
    got = judge(trace, t0, t0 + 0.05, None)
    assert got.window_s == pytest.approx(trace.stopped_s - trace.started_s)
    assert got.causes and got.half_ratio is None


def test_a_file_without_the_new_columns_is_not_judged_on_cpu():
    trace, t0, t1, steps = simulate(HostSim(burner_cores=0.9), np.random.default_rng(3))
    values = {k: v for k, v in trace.host.values.items() if k not in d.NEEDED}
    old = TelemetryTrace(**{**trace.__dict__, "host": replace(trace.host, values=values)})
    got = judge(old, t0, t1, None)
    assert got.reason == "" and got.other_cores is None
    assert "written before the rule" in got.not_judged[0]


def test_other_gpu_processes_are_a_cause():
    trace, t0, t1, steps = simulate(HostSim(), np.random.default_rng(4))
    busy = TelemetryTrace(**{**trace.__dict__, "gpu_others": ("GPU 0: pid 4242 (1,024 MiB)",)})
    assert judge(busy, t0, t1, steps).causes == ("other processes held the GPU: GPU 0: pid 4242 (1,024 MiB)",)


def test_the_reading_survives_its_json():
    got = run(HostSim(burner_cores=0.9))
    assert Disturbance.from_dict(got.to_dict()) == got


def test_quiet_and_burner_rates_on_simulated_windows():
    """The benchmark's claim in small: a quiet window without steal flags rarely, a 0.5-core burner nearly always
    (also with the steal a cloud VM shows under load, ``QUIET_STEAL``)."""
    quiet = sum(bool(run(HostSim(window_s=3.0), seed).causes) for seed in range(200))
    burnt = sum(bool(run(replace(QUIET_STEAL, burner_cores=0.5), seed).causes) for seed in range(200))
    assert quiet <= 2 and burnt >= 190, (quiet, burnt)


def _on_cpus(trace: TelemetryTrace, cpus: int, other_cores: float, steal_share: float) -> TelemetryTrace:
    """``trace`` with the tree's CPUs' columns written by hand: ``cpus`` CPUs, the tree's own CPU on them plus
    ``other_cores`` of other work, and steal of ``steal_share`` of that running time (10 ms ticks)."""
    host = trace.host
    t = host.t_s
    running = host.values["process_cpu_s"] + other_cores * t
    steal = np.floor(steal_share * running / 0.01) * 0.01
    values = {**host.values, "tree_cpus_total_s": cpus * t, "tree_cpus_busy_s": running + steal,
              "tree_cpus_steal_s": steal}
    ok = {**host.ok, **{c: np.ones(t.size, bool) for c in d.TREE_CPUS}}
    return TelemetryTrace(**{**trace.__dict__, "host": replace(host, values=values, ok=ok)})


def test_the_trees_cpus_are_read_from_their_own_columns_not_the_hosts():
    """An 8-CPU host whose tree runs on 2 of them: a 0.6-core neighbour there (1.4 of 2 busy, under half a core
    idle) competes, though the host has 5 cores idle; steal of 8 % there flags though the host's steal is nil."""
    trace, t0, t1, steps = simulate(HostSim(cores=8, window_s=10.0), np.random.default_rng(7))
    got = judge(_on_cpus(trace, 2, 0.6, 0.08), t0, t1, steps)
    assert got.cpus_cores == pytest.approx(2.0, abs=0.01) and got.host_cores == pytest.approx(8.0, abs=0.01)
    assert got.cpus_other_cores == pytest.approx(0.6, abs=0.05) and got.cpus_idle_cores < 0.5
    assert got.steal_share == pytest.approx(0.08, abs=0.01) and got.steal_cores == pytest.approx(0.0, abs=0.01)
    assert got.causes[0].startswith("other processes used 0.6") and "of 2 on the engine's CPUs (3" in got.causes[0]
    assert got.causes[1].startswith("the hypervisor took 8.0 % of the engine's CPU time")
    quiet = judge(_on_cpus(trace, 2, 0.0, 0.0), t0, t1, steps)
    assert quiet.causes == () and quiet.cpus_idle_cores == pytest.approx(1.0, abs=0.1)


def test_a_tree_cpu_set_that_ran_nothing_has_no_steal_share():
    trace, t0, t1, steps = simulate(HostSim(window_s=5.0), np.random.default_rng(8))
    host = trace.host
    idle = {**host.values, "tree_cpus_busy_s": np.zeros(host.t_s.size), "tree_cpus_steal_s": np.zeros(host.t_s.size)}
    got = judge(TelemetryTrace(**{**trace.__dict__, "host": replace(host, values=idle)}), t0, t1, steps)
    assert got.steal_share is None and got.causes == ()


def test_the_runs_steady_steal_is_the_larger_of_the_builds_and_the_earlier_entries_median():
    """Wrong code this fails: the mean instead of the median (one burst would excuse the next), the smaller of the
    two, an entry's own steal counted in its own steady level (``level`` is read before ``add``)."""
    from inproc.telemetry.busy import SteadySteal

    steady = SteadySteal()
    assert steady.level() is None
    steady.build_share = 0.0
    assert steady.level() == 0.0
    for steal in (0.01, 0.02, 0.30):  # entries with steal of 1 %, 2 % and a 30 % burst of their running time
        trace, *_ = simulate(HostSim(window_s=5.0, steal_cores=steal * 1.03, daemon_cores=0.03),
                             np.random.default_rng(9))
        steady.add(trace.host)
    assert steady.level() == pytest.approx(0.02, abs=0.003)  # the median: the burst moves it little
    steady.build_share = 0.05
    assert steady.level() == 0.05
    steady.add(None)  # an entry without host samples: nothing to add
    assert steady.level() == 0.05


def test_with_a_cloud_vms_steal_the_windows_flagged_for_steal_are_those_it_slowed_five_percent():
    """``QUIET_STEAL`` windows (truth: the steal drawn by the simulation, read back as its steal share): every
    window flagged for steal lost at least 4.5 % of its running time to it, every one that lost 5.5 % is flagged
    (the edge's half-point either side: counter ticks), and such windows are rare."""
    steal_flagged = lost = 0
    for seed in range(300):
        trace, t0, t1, steps = simulate(replace(QUIET_STEAL, window_s=3.0), np.random.default_rng(seed))
        host = trace.host
        t = host.t_s
        truth = (np.interp(t1, t, host.values["host_steal_s"]) - np.interp(t0, t, host.values["host_steal_s"])) / (
            np.interp(t1, t, host.values["host_busy_s"]) - np.interp(t0, t, host.values["host_busy_s"])
            - np.interp(t1, t, host.values["host_steal_s"]) + np.interp(t0, t, host.values["host_steal_s"]))
        got = judge(trace, t0, t1, steps)
        flagged = any(c.startswith("the hypervisor took") for c in got.causes)
        assert not flagged or truth >= 0.045, (truth, got.causes)
        assert flagged or truth < 0.055, (truth, got.causes)
        steal_flagged += flagged
        lost += truth >= 0.05
    assert 0 < steal_flagged <= 0.15 * 300 and abs(steal_flagged - lost) <= 3, (steal_flagged, lost)
