"""Which kernels a change sits in: each category's device time per step, new − baseline, with its interval.

Read from the cells' kernel passes (``inproc.kernels.summary.KernelSummary``), where every run
on both sides has one. The test follows compare's rows (``inproc.compare.estimate``):

- **several runs on a side**: the runs are the units. A run's figure is its mean device
  time per profiled step in the category; the change is the difference of the sides'
  means, its standard error from the run-to-run variance pooled over both sides
  (df = runs − 2), its interval Student's t.
- **one run each side**: the profiled steps are the units. A seeded circular block bootstrap
  over each side's steps (``inproc.compare.stats.block_counts``, the same as the within-run
  interval of compare's rows) gives the standard error of the difference of the means; the
  interval is Student's t on the blocks' degrees of freedom (the blocks of both sides less 2:
  a pass of 16 steps is about six blocks a side, and a normal quantile on so few pieces of a
  correlated series names a clean category too often). How much a whole run varies is not
  in it, so, as compare's rows, the
  cell is shown but no category is named unless the user states the run-to-run spread
  (``--run-spread``, a log standard deviation σ): each category's standard error is then
  widened by √2·σ times its baseline time, in quadrature (``inproc.compare.stats.widen``'s
  way), and the naming is marked indicative.

**The naming rule** (defined here, once). A category is *named* when both hold:

1. its change is among the alarms of one Benjamini–Hochberg step-up at
   ``spread.NIGHT_ALPHA`` over every category of every cell tested together (as compare's
   rows: a comparison with no change names a category in at most that share of cases), so
   its interval at the comparison's confidence excludes zero; and
2. it is material: its size is at least :data:`MATERIAL` of the baseline's own step time
   (or of the baseline's kernel sum where the step time is not known).

Within a named category, the kernels named are those whose mean device time per step moved
the same way, largest first, until they hold :data:`KERNEL_COVER` of the category's change
(at most :data:`MAX_KERNELS`), among the names each side keeps (``summary.TOP_NAMES``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from inproc.compare.estimate import StatSettings
from inproc.compare.samples import BETWEEN_RUNS, BLOCK_BOOTSTRAP
from inproc.compare.spread import NIGHT_ALPHA, RESOLUTION, night_alarms, t_sf
from inproc.compare.stats import block_counts, block_length, t_quantile
from inproc.kernels.categories import CATEGORIES
from inproc.kernels.summary import KernelSummary
from inproc.record.schema import DecodeEntry
from inproc.record.summarize import kernel_summary

#: A category's change is material at this share of the baseline's step time (``history.tail.STEADY``'s 2 %).
MATERIAL = 0.02
KERNEL_COVER, MAX_KERNELS = 0.8, 3
#: A side needs this many profiled steps for the within-run test.
MIN_STEPS = 4


@dataclass(frozen=True)
class CategoryChange:
    """One category: mean device ms per step on each side, the change with its interval, its p-value, named or not."""

    category: str
    base_ms: float
    new_ms: float
    delta_ms: float
    low_ms: float
    high_ms: float
    p_change: float
    named: bool = False


@dataclass(frozen=True)
class KernelShift:
    """One kernel name whose mean device time per step moved (ms per step, new − baseline)."""

    name: str
    delta_ms: float


@dataclass(frozen=True)
class KernelChange:
    """One cell's categories compared, and the kernels within each named one."""

    context: int
    concurrency: int
    test: str  # samples.BETWEEN_RUNS (runs as units) or samples.BLOCK_BOOTSTRAP (profiled steps, one run each side)
    n_base: int  # runs (between runs) or profiled steps (one run each side)
    n_new: int
    base_step_ms: float | None  # the baseline's own step time over the profiled steps (mean over runs)
    step_delta_ms: float | None  # the step's own time, new − baseline
    material_ms: float  # MATERIAL of the baseline's step time (or kernel sum)
    categories: tuple[CategoryChange, ...]
    kernels: tuple[tuple[str, tuple[KernelShift, ...]], ...] = ()  # (named category, its kernels that moved)
    run_spread: float | None = None  # one run each side: the stated run-to-run log sd the test used (None: none)

    @property
    def judged(self) -> bool:
        """Its categories can be named: runs as units, or one run each side against a stated run spread."""
        return self.test == BETWEEN_RUNS or self.run_spread is not None

    @property
    def named(self) -> tuple[CategoryChange, ...]:
        """The named categories, largest change first."""
        return tuple(sorted((c for c in self.categories if c.named), key=lambda c: -abs(c.delta_ms)))

    @property
    def indicative(self) -> bool:
        return self.test == BLOCK_BOOTSTRAP

    def shifts(self, category: str) -> tuple[KernelShift, ...]:
        return dict(self.kernels).get(category, ())


def _mean_step_ms(sides: Sequence[KernelSummary]) -> float | None:
    values = [s.step_s for s in sides]
    return float(np.mean(values)) * 1e3 if values and all(v is not None for v in values) else None


def _between(base: Sequence[KernelSummary], new: Sequence[KernelSummary], floor_ms: float):
    """(delta, se, df) per category: run means as units, pooled variance."""
    b = np.array([s.per_step_ns.mean(axis=0) for s in base]) / 1e6
    n = np.array([s.per_step_ns.mean(axis=0) for s in new]) / 1e6
    df = b.shape[0] + n.shape[0] - 2
    ss = ((b - b.mean(axis=0)) ** 2).sum(axis=0) + ((n - n.mean(axis=0)) ** 2).sum(axis=0)
    sd = np.maximum(np.sqrt(ss / df), floor_ms)
    se = sd * math.sqrt(1 / b.shape[0] + 1 / n.shape[0])
    return n.mean(axis=0) - b.mean(axis=0), se, float(df)


def _within(base: KernelSummary, new: KernelSummary, resamples: int, seed: int, floor_ms: float):
    """(delta, se, df) per category: profiled steps as units, block bootstrap of each side's mean; df: blocks − 2."""
    rng = np.random.default_rng(seed)
    means = []
    for side in (base, new):
        n = side.steps
        counts = block_counts(rng, n, block_length(n), resamples)
        means.append(counts @ side.per_step_ns / n / 1e6)
    diffs = means[1] - means[0]
    d = new.per_step_ns.mean(axis=0) / 1e6 - base.per_step_ns.mean(axis=0) / 1e6
    se = np.maximum(diffs.std(axis=0, ddof=1), floor_ms * math.sqrt(1 / base.steps + 1 / new.steps))
    blocks = -(-base.steps // block_length(base.steps)) + -(-new.steps // block_length(new.steps))
    return d, se, float(blocks - 2)


def cell_change(cell: tuple[int, int], base: Sequence[KernelSummary], new: Sequence[KernelSummary],
                confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
                run_spread: float | None = None) -> KernelChange | None:
    """The cell's categories tested (none named yet: :func:`judge` names them); None: too few runs or steps.

    ``run_spread``: the stated run-to-run log sd, used with one run each side only."""
    if not base or not new:
        return None
    several = len(base) > 1 or len(new) > 1
    if not several and (base[0].steps < MIN_STEPS or new[0].steps < MIN_STEPS):
        return None
    step_b, step_n = _mean_step_ms(base), _mean_step_ms(new)
    reference = step_b if step_b else float(np.mean([s.total_ns() for s in base])) / 1e6
    floor = RESOLUTION * reference  # figures that repeat exactly would otherwise make any change infinitely sure
    if several:
        d, se, df = _between(base, new, floor)
    else:
        d, se, df = _within(base[0], new[0], resamples, seed, floor)
    mean_b = np.mean([s.per_step_ns.mean(axis=0) for s in base], axis=0) / 1e6
    mean_n = np.mean([s.per_step_ns.mean(axis=0) for s in new], axis=0) / 1e6
    stated = run_spread if not several else None
    if stated is not None:
        se = np.hypot(se, math.sqrt(2) * stated * mean_b)
    half = t_quantile((1 + confidence) / 2, df) * se
    cats = tuple(CategoryChange(c, float(mean_b[k]), float(mean_n[k]), float(d[k]), float(d[k] - half[k]),
                                float(d[k] + half[k]), min(1.0, 2 * t_sf(abs(float(d[k])) / float(se[k]), df)))
                 for k, c in enumerate(CATEGORIES) if mean_b[k] > 0 or mean_n[k] > 0)
    units = (len(base), len(new)) if several else (base[0].steps, new[0].steps)
    return KernelChange(cell[0], cell[1], BETWEEN_RUNS if several else BLOCK_BOOTSTRAP, *units, step_b,
                        step_n - step_b if step_b is not None and step_n is not None else None,
                        MATERIAL * reference, cats, _kernel_names(base, new), stated)


def _name_means(sides: Sequence[KernelSummary]) -> dict[str, tuple[str, float]]:
    """Each kept name's (category, mean device ms per step over the runs); a run not keeping it counts 0."""
    out: dict[str, tuple[str, float]] = {}
    for s in sides:
        for name, cat, ns in zip(s.names, s.name_categories, s.name_ns):
            out[name] = (cat, out.get(name, (cat, 0.0))[1] + float(ns) / 1e6 / len(sides))
    return out


def _kernel_names(base, new) -> tuple[tuple[str, tuple[KernelShift, ...]], ...]:
    """Per category, every kept name's change (largest first); :func:`judge` keeps those of the named categories."""
    b, n = _name_means(base), _name_means(new)
    by_cat: dict[str, list[KernelShift]] = {}
    for name in {**b, **n}:
        cat = (n.get(name) or b.get(name))[0]
        by_cat.setdefault(cat, []).append(KernelShift(name, n.get(name, (cat, 0.0))[1] - b.get(name, (cat, 0.0))[1]))
    return tuple((c, tuple(sorted(v, key=lambda k: -abs(k.delta_ms)))) for c, v in by_cat.items())


def _moved(shifts: Sequence[KernelShift], delta_ms: float) -> tuple[KernelShift, ...]:
    """The names that moved with the category, largest first, until they hold KERNEL_COVER of its change."""
    out, held = [], 0.0
    for k in sorted((k for k in shifts if k.delta_ms * delta_ms > 0), key=lambda k: -abs(k.delta_ms)):
        if len(out) == MAX_KERNELS or held >= KERNEL_COVER * abs(delta_ms):
            break
        out.append(k)
        held += abs(k.delta_ms)
    return tuple(out)


def judge(changes: Sequence[KernelChange], alpha: float = NIGHT_ALPHA) -> tuple[KernelChange, ...]:
    """The changes with their categories named by the module's rule: one alarm rate over all of them, and material."""
    flat = [(i, j) for i, ch in enumerate(changes) if ch.judged for j in range(len(ch.categories))]
    hits = night_alarms([changes[i].categories[j].p_change for i, j in flat], alpha)
    alarm = {key: bool(h) for key, h in zip(flat, hits)}
    out = []
    for i, ch in enumerate(changes):
        cats = tuple(replace(c, named=alarm.get((i, j), False) and abs(c.delta_ms) >= ch.material_ms)
                     for j, c in enumerate(ch.categories))
        kernels = tuple((c.category, _moved(ch.shifts(c.category), c.delta_ms)) for c in cats if c.named)
        out.append(replace(ch, categories=cats, kernels=kernels))
    return tuple(out)


def compare_kernels(cells: Sequence[tuple[tuple[int, int], Sequence[DecodeEntry], Sequence[DecodeEntry]]],
                    t: StatSettings = StatSettings()) -> tuple[KernelChange, ...]:
    """Every cell whose runs all have a kernel pass, on both sides, tested and judged together (a stated
    ``--run-spread``, the same for every metric, is read from tok/s's)."""
    stated = t.run_spread.get("tok_s")
    out = []
    for cell, base, new in cells:
        b, n = [kernel_summary(e) for e in base], [kernel_summary(e) for e in new]
        if b and n and None not in b and None not in n:
            found = cell_change(cell, b, n, t.confidence, t.resamples, t.seed, stated.log_sd if stated else None)
            out += [found] if found is not None else []
    return judge(out)


def diagnosis(base: Sequence[KernelSummary | None], new: Sequence[KernelSummary | None]) -> str:
    """One cell's kernel change in words, judged alone (a history change, a bisect); "" unless every run has a pass."""
    if not base or not new or None in base or None in new:
        return ""
    found = cell_change((0, 0), base, new)
    return describe(judge([found])[0]) if found is not None else ""


def _signed(x: float) -> str:
    """"+1.87": two decimals, or two significant digits below 0.1 (ms)."""
    return (f"{x:+.2f}" if abs(x) >= 0.1 or x == 0 else f"{x:+.2g}").replace("-", "−")


def _ms(x: float) -> str:
    return f"{_signed(x)} ms"


def describe(ch: KernelChange) -> str:
    """The change in words: "the change sits in moe: +1.9 ms per step [+1.7, +2.1] of the step's +2.0 ms;
    fused_moe_kernel +1.8 ms", or that no category moved beyond its noise."""
    of = f" of the step's {_ms(ch.step_delta_ms)}" if ch.step_delta_ms is not None else ""
    parts = []
    for c in ch.named:
        names = "".join(f"; {k.name} {_ms(k.delta_ms)}" for k in ch.shifts(c.category))
        parts.append(f"{c.category}: {_ms(c.delta_ms)} per step [{_signed(c.low_ms)}, {_signed(c.high_ms)}]{of}{names}")
    unit = f"{ch.n_base} and {ch.n_new} " + ("runs" if ch.test == BETWEEN_RUNS else "profiled steps, one run each side")
    unit += f", stated run spread {ch.run_spread * 100:g}%" if ch.run_spread is not None else ""
    if parts:
        return "the change sits in " + "; and in ".join(parts) + f" ({unit})"
    largest = max(ch.categories, key=lambda c: abs(c.delta_ms), default=None)
    detail = (f"largest {largest.category} {_ms(largest.delta_ms)} [{_signed(largest.low_ms)}, "
              f"{_signed(largest.high_ms)}]" if largest else "no category ran")
    if not ch.judged:
        return (f"within-run only, no category named: {detail} ({unit}); state --run-spread, or compare against a "
                f"baseline of several runs")
    return f"no kernel category moved beyond its noise; {detail} ({unit})"
