"""Was the machine disturbed during an entry's window? The rule, its thresholds and its reason in words.

A disturbed entry keeps its status and figures, is flagged with the cause, and is left out of
verdicts (compare, baseline, history, bisect), as a throttled one is: its speed may say more about
other work on the machine than about the engine. Sources, all read from the window's own samples:

* other processes' CPU: the busy CPU (``/proc/stat``'s per-CPU lines, steal left out) less this
  process tree's (``os.times()`` of this process plus its live and reaped children's CPU time,
  engine workers included), in cores, on the CPUs the tree may run on (its threads' affinity) and
  on the whole host;
* steal: CPU time the hypervisor gave to other guests (the per-CPU lines' steal, Linux) on the tree's
  CPUs, as a share of their running time, beyond the run's steady share (``inproc.telemetry.busy.SteadySteal``);
* CPU frequency: the mean over CPUs against their stated maximum (``psutil.cpu_freq()``);
* the window's own stability (decode cells): the median step time of its second half against its
  first, and the longest stretch of consecutive steps far above the window's median;
* on a GPU, compute processes that are not this tree's holding one of the sampled GPUs
  (``inproc.telemetry.gpu_procs``, read as each entry's sampling ends).

Every threshold is below, each with its reason; ``docs/method.md`` quotes them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from inproc.telemetry import metrics as m
from inproc.telemetry.series import SampleSeries
from inproc.telemetry.trace import TelemetryTrace

# Other processes' CPU flags a window when it reaches MIN_OTHER_CORES on the tree's CPUs while they had less
# than MIN_IDLE_CORES idle (the other work then competes with this tree for a core: a decode step waits for its
# slowest thread, so a quarter core taken from one of them costs the step whatever the tree's size), or when it
# reaches MIN_OTHER_CORES and OTHER_HOST_SHARE of the host's CPUs anywhere on the host (it shares caches and
# memory bandwidth even with cores to spare). A quiet Linux host's daemons and kernel threads use a few
# hundredths of a core; a quarter core is ten times that and half what the smallest burner worth naming
# (0.5 core) uses.
MIN_OTHER_CORES = 0.25
MIN_IDLE_CORES = 0.5
OTHER_HOST_SHARE = 0.10
# Steal: the hypervisor's share s of the running time of the tree's CPUs (steal ÷ (busy − steal) there), which
# is the share of the tree's own CPU time it lost when steal falls on what runs there alike. A step that loses
# s of its CPU takes (1 + s) times as long, so against the run's steady share s0 the window's headline moved by
# (1 + s) ÷ (1 + s0) − 1. Below STEAL_MOVE (compare's default threshold, ``CompareSettings.threshold``) that
# cannot move a verdict by itself, and is not a disturbance; at or beyond it, it is.
STEAL_MOVE = 0.05
# The mean frequency over CPUs below half its maximum while at least half the host is busy: the mean
# then speaks for busy CPUs (idle ones park at their minimum, so a mostly idle host is not judged).
MIN_FREQ_SHARE = 0.50
FREQ_BUSY_SHARE = 0.50
# The window's stability. Its level (the second half's median step time against the first's) moves on a
# quiet machine too: a batch that changes shape, requests replaced, caches warming (a quiet recorded
# vLLM cell fell 2.2x). So a level change of HALF_RATIO_NAMED or more is only named beside another cause,
# and flags a window alone from HALF_RATIO_ALONE (either direction). A stretch of at least
# MIN_STRETCH_STEPS consecutive steps, and at least STRETCH_SHARE of the window's steps, each above
# STRETCH_FACTOR times the window's median flags alone: a lone prefill of a replacement request is one or
# two steps, a busy neighbour is many.
HALF_RATIO_NAMED = 1.5
HALF_RATIO_ALONE = 3.0
STRETCH_FACTOR = 3.0
MIN_STRETCH_STEPS = 8
STRETCH_SHARE = 0.20
MIN_HALF_STEPS = 4  # each half needs this many steps for its median to be a level
# Counters tick in 10 ms and the tree's children are read at 1 Hz: a window shorter than this is
# judged over the whole sampled entry (``TelemetryTrace.started_s`` to ``stopped_s``) instead.
MIN_WINDOW_S = 1.0
# The kernel's CPU counters (/proc/stat, /proc/PID/stat) count whole ticks of this length, and the host's
# and the tree's are read one after the other: over a window of W seconds each of the host, tree and other
# figures is known to about COUNTER_TICK_S × (ticks of slack) ÷ W cores (the tree may read a little above
# the host's total on a host it keeps busy).
COUNTER_TICK_S = 0.01
# The columns a host series needs to be judged (files written before them are not judged). A file without the
# tree's CPU columns is judged with all CPUs as the tree's (what they are wherever the engine is not pinned).
NEEDED = ("children_cpu_s", "host_steal_s")
TREE_CPUS = ("tree_cpus_busy_s", "tree_cpus_total_s", "tree_cpus_steal_s")


@dataclass(frozen=True)
class Disturbance:
    """What the disturbance rule read over one window, and what it found (``causes``)."""

    window_s: float | None = None  # the span the CPU figures cover (the window, or the entry when it is short)
    host_cores: float | None = None  # CPUs of the host (all CPU seconds ÷ window seconds)
    tree_cores: float | None = None  # this process and its children
    other_cores: float | None = None  # busy − steal − this tree, on the whole host
    idle_cores: float | None = None
    steal_cores: float | None = None  # on the whole host
    cpus_cores: float | None = None  # the tree's CPUs (all their CPU seconds ÷ window seconds)
    cpus_other_cores: float | None = None  # busy − steal − this tree, on the tree's CPUs
    cpus_idle_cores: float | None = None
    cpus_steal_cores: float | None = None
    steal_share: float | None = None  # steal ÷ running time (busy − steal), on the tree's CPUs
    steady_steal_share: float | None = None  # the run's steady steal share as the entry began (None: not measured)
    freq_share: float | None = None  # mean CPU frequency ÷ its maximum
    half_ratio: float | None = None  # second half's median step time ÷ first half's
    stretch_steps: int | None = None  # longest run of steps above STRETCH_FACTOR × the median
    window_steps: int | None = None
    gpu_others: tuple[str, ...] = ()  # "GPU 0: pid 4242 (1,024 MiB)" for each other compute process
    causes: tuple[str, ...] = ()
    not_judged: tuple[str, ...] = field(default_factory=tuple)

    @property
    def reason(self) -> str:
        """``disturbed: <cause>; <cause>`` or "" when no source crossed its threshold."""
        return "disturbed: " + "; ".join(self.causes) if self.causes else ""

    def to_dict(self) -> dict[str, object]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {**d, "gpu_others": list(self.gpu_others), "causes": list(self.causes),
                "not_judged": list(self.not_judged)}

    @classmethod
    def from_dict(cls, d: dict) -> "Disturbance":
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        for k in ("gpu_others", "causes", "not_judged"):
            known[k] = tuple(known.get(k) or ())
        return cls(**known)


def judge(trace: TelemetryTrace, t_open_s: float, t_close_s: float,
          step_times_s: np.ndarray | None = None, step_ends_s: np.ndarray | None = None) -> Disturbance:
    """The rule over ``[t_open_s, t_close_s]`` (perf_counter seconds) of ``trace``; ``step_times_s``: the
    window's steps in order (decode cells; None for prefill entries), ending at ``step_ends_s``."""
    notes: list[str] = []
    cpu = _cpu(trace, t_open_s, t_close_s, notes)
    stab = stability(step_times_s, step_ends_s)
    gpu_others = tuple(trace.gpu_others)
    d = Disturbance(**cpu, **stab, gpu_others=gpu_others, steady_steal_share=trace.steady_steal_share,
                    not_judged=tuple(notes))
    return Disturbance(**{**d.__dict__, "causes": causes(d)})


def causes(d: Disturbance) -> tuple[str, ...]:
    """Each source past its threshold, in words (the first is the CPU others used)."""
    out: list[str] = []
    if cause := other_cause(d):
        out.append(cause)
    if (moved := steal_moved(d)) is not None and moved >= STEAL_MOVE:
        steady = f" against the run's steady {100 * d.steady_steal_share:.1f} %" if d.steady_steal_share else ""
        out.append(f"the hypervisor took {100 * d.steal_share:.1f} % of the engine's CPU time (steal, "
                   f"{d.cpus_steal_cores:.2f} cores){steady} during the window")
    busy = None if d.idle_cores is None else 1 - d.idle_cores / d.host_cores
    if d.freq_share is not None and d.freq_share < MIN_FREQ_SHARE and busy is not None and busy >= FREQ_BUSY_SHARE:
        out.append(f"the CPUs ran at {100 * d.freq_share:.0f} % of their maximum frequency")
    if d.half_ratio is not None and max(d.half_ratio, 1 / d.half_ratio) >= (HALF_RATIO_NAMED if out else HALF_RATIO_ALONE):
        word = "rose" if d.half_ratio > 1 else "fell"
        size = d.half_ratio if d.half_ratio > 1 else 1 / d.half_ratio
        out.append(f"step time {word} {size:.1f}× in its second half")
    if d.stretch_steps is not None and d.stretch_steps >= max(MIN_STRETCH_STEPS, STRETCH_SHARE * d.window_steps):
        out.append(f"{d.stretch_steps} steps in a row ({100 * d.stretch_steps / d.window_steps:.0f} % of the "
                   f"window) took over {STRETCH_FACTOR:g}× its median")
    if d.gpu_others:
        out.append("other processes held the GPU: " + ", ".join(d.gpu_others))
    return tuple(out)


def other_cause(d: Disturbance) -> str:
    """Other processes' CPU in words when it crossed its rule: on the tree's CPUs with no core to spare, or a
    share of the whole host; "" when it did not (or was not read)."""
    if d.cpus_other_cores is not None and d.cpus_other_cores >= MIN_OTHER_CORES and d.cpus_idle_cores < MIN_IDLE_CORES:
        where = "" if abs(d.cpus_cores - d.host_cores) < 0.5 else " on the engine's CPUs"
        return (f"other processes used {d.cpus_other_cores:.2f} cores of {d.cpus_cores:.0f}{where} "
                f"({100 * d.cpus_other_cores / d.cpus_cores:.0f} %) during the window")
    if d.other_cores is not None and d.other_cores >= MIN_OTHER_CORES and d.other_cores >= OTHER_HOST_SHARE * d.host_cores:
        return (f"other processes used {d.other_cores:.2f} cores of {d.host_cores:.0f} "
                f"({100 * d.other_cores / d.host_cores:.0f} %) during the window")
    return ""


def steal_moved(d: Disturbance) -> float | None:
    """How much the window's steal beyond the run's steady share slowed its steps: (1 + s) ÷ (1 + s0) − 1
    (s0 0 when not measured); None when the steal share was not read."""
    if d.steal_share is None:
        return None
    return (1 + d.steal_share) / (1 + (d.steady_steal_share or 0.0)) - 1


def stability(step_times_s: np.ndarray | None, step_ends_s: np.ndarray | None = None) -> dict[str, float | int | None]:
    """The window's halves in time (median step time of the steps ending in the second ÷ the first) and its
    longest slow stretch; ``step_ends_s`` default: the steps back to back."""
    if step_times_s is None or step_times_s.size == 0:
        return {"half_ratio": None, "stretch_steps": None, "window_steps": None}
    t = np.asarray(step_times_s, dtype=float)
    n = t.size
    ends = np.cumsum(t) if step_ends_s is None else np.asarray(step_ends_s, dtype=float)
    start = ends[0] - t[0]
    second = ends > start + (ends[-1] - start) / 2
    ratio = None
    if min(int(second.sum()), n - int(second.sum())) >= MIN_HALF_STEPS:
        a, b = float(np.median(t[~second])), float(np.median(t[second]))
        ratio = b / a if a > 0 else None
    slow = t > STRETCH_FACTOR * float(np.median(t))
    return {"half_ratio": ratio, "stretch_steps": longest_run(slow), "window_steps": int(n)}


def longest_run(flags: np.ndarray) -> int:
    """The longest run of True in ``flags``."""
    best = run = 0
    for f in flags.tolist():
        run = run + 1 if f else 0
        best = max(best, run)
    return best


def _cpu(trace: TelemetryTrace, t_open_s: float, t_close_s: float, notes: list[str]) -> dict[str, float | None]:
    none = dict.fromkeys(CPU_FIGURES)
    host = trace.host
    if host is None:
        notes.append(f"host telemetry absent: {trace.host_absent_reason or 'not sampled'}")
        return none
    missing = [c for c in NEEDED if c not in host.values]
    if missing:
        notes.append(f"host samples lack {', '.join(missing)} (written before the rule)")
        return none
    if t_close_s - t_open_s < MIN_WINDOW_S:
        t_open_s, t_close_s = trace.started_s, trace.stopped_s
    try:
        return {**none, **cpu_figures(host, t_open_s, t_close_s)}
    except m.Absent as why:
        notes.append(f"host CPU: {why}")
        return none


CPU_FIGURES = ("window_s", "host_cores", "tree_cores", "other_cores", "idle_cores", "steal_cores", "cpus_cores",
               "cpus_other_cores", "cpus_idle_cores", "cpus_steal_cores", "steal_share", "freq_share")


def cpu_figures(host: SampleSeries, t_open_s: float, t_close_s: float) -> dict[str, float | None]:
    """Cores of the host, this tree, other processes, idle and steal over the window, on the whole host and on
    the tree's CPUs; the steal share there; the frequency share."""
    span = t_close_s - t_open_s
    if span <= 0:
        raise m.Absent(f"empty window {t_open_s:.3f}-{t_close_s:.3f} s")

    def cores(column: str) -> float:
        return m.counter_delta(host, column, t_open_s, t_close_s) / span

    total, busy, steal = cores("host_total_s"), cores("host_busy_s"), cores("host_steal_s")
    tree = cores("process_cpu_s") + _children_delta(host, t_open_s, t_close_s) / span
    if total <= 0:
        raise m.Absent("host CPU time did not advance over the window")
    mine = (total, busy, steal)  # the tree's CPUs: all of them where the file has no per-CPU columns
    if all(c in host.values and host.valid(c)[0].size >= 2 for c in TREE_CPUS):
        mine = (cores("tree_cpus_total_s"), cores("tree_cpus_busy_s"), cores("tree_cpus_steal_s"))
    running = mine[1] - mine[2]
    return {"window_s": span, "host_cores": total, "tree_cores": tree,
            "other_cores": max(0.0, busy - steal - tree), "idle_cores": max(0.0, total - busy),
            "steal_cores": steal, "cpus_cores": mine[0], "cpus_other_cores": max(0.0, running - tree),
            "cpus_idle_cores": max(0.0, mine[0] - mine[1]), "cpus_steal_cores": mine[2],
            "steal_share": mine[2] / running if running > 0 else None,
            "freq_share": _freq_share(host, t_open_s, t_close_s)}


def _children_delta(host: SampleSeries, t_open_s: float, t_close_s: float) -> float:
    """The children's CPU seconds over the window. The sum over live children drops when one exits
    before it is reaped; only increases count (a drop is that child's time leaving the sum)."""
    t, v = host.valid("children_cpu_s")
    if t.size < 2:
        return 0.0  # never read (no psutil children query): no child time to add
    cumulative = np.concatenate(([0.0], np.cumsum(np.clip(np.diff(v), 0.0, None))))
    lo, hi = max(t_open_s, float(t[0])), min(t_close_s, float(t[-1]))
    return float(np.interp(hi, t, cumulative) - np.interp(lo, t, cumulative)) if hi > lo else 0.0


def _freq_share(host: SampleSeries, t_open_s: float, t_close_s: float) -> float | None:
    try:
        mean = m.window_mean(host, "cpu_freq_mhz", t_open_s, t_close_s)
        top = m.window_max(host, "cpu_freq_max_mhz", t_open_s, t_close_s)
    except m.Absent:
        return None
    return mean / top if top > 0 else None  # many VMs state no maximum (0)
