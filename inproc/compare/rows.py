"""The rows of one comparison tested together: each row's spread, each row's test, one alarm rate for all.

A row is a comparable cell and one metric (``inproc.compare.verdicts`` decides which cells
are comparable). With several runs on a side, each row's run-to-run spread is learned
from the runs (moderated across the metric's rows); with one run each side, only the
within-run interval is known, and the row is judged only when the user states the spread
(``inproc.compare.estimate``). Every tested row's p-value then enters one
Benjamini–Hochberg step-up (``inproc.compare.spread.night_alarms``): a comparison with
no change raises an alarm in at most ``NIGHT_ALPHA`` of cases, however many rows it holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from inproc.compare.bound import bound_test
from inproc.compare.estimate import Estimate, StatSettings, WithinRun, estimate_of, figures, stated_test, within_run
from inproc.compare.samples import BLOCK_BOOTSTRAP, METRICS
from inproc.compare.spread import (MIN_SPREAD_DF, NIGHT_ALPHA, ChangeTest, Spread, moderated_spreads, night_alarms,
                                   residual_ss, change_test)
from inproc.compare.stats import geometric_mean
from inproc.record.schema import DecodeEntry

INSUFFICIENT = "insufficient data"


@dataclass(frozen=True)
class Candidate:
    """A comparable row before its test: the cell's entries on each side."""

    metric: str
    base: Sequence[DecodeEntry]
    new: Sequence[DecodeEntry]


@dataclass(frozen=True)
class Tested:
    """A candidate's outcome: the estimate and, when it could be tested, its change test (else why not)."""

    estimate: Estimate | None
    test: ChangeTest | None
    reason: str  # why it was not tested ("" when tested)
    insufficient: bool = False  # not tested for want of a run-to-run spread (else: not comparable)
    alarm: bool | None = None  # decided by the row itself (the maximum spread's bound); None: by the one alarm rate


def _runs(n: int, what: str) -> str:
    return f"{n} {what} run{'s' if n != 1 else ''}"


def _between(cands: Sequence[Candidate], t: StatSettings) -> list[Tested]:
    """Several runs on a side: each row's spread learned from the runs, moderated per metric."""
    logs = [(np.log(figures(c.base, c.metric, t)), np.log(figures(c.new, c.metric, t))) for c in cands]
    spreads: list[Spread | None] = [None] * len(cands)
    for metric in dict.fromkeys(c.metric for c in cands):
        idx = [k for k, c in enumerate(cands) if c.metric == metric]
        parts = [residual_ss([logs[k][0], logs[k][1]]) for k in idx]
        nb = max(len(c.base) for c in cands)
        nn = max(len(c.new) for c in cands)
        found = moderated_spreads([p[0] for p in parts], [p[1] for p in parts],
                                  f"learned from {_runs(nb, 'baseline')} and {_runs(nn, 'new')}")
        for k, sp in zip(idx, found):
            spreads[k] = sp
    out = []
    for (lb, ln), sp, c in zip(logs, spreads, cands):
        if lb.size == 0 or ln.size == 0:
            out.append(Tested(None, None, f"{METRICS[c.metric].label} in {lb.size} baseline and {ln.size} new runs"))
            continue
        scale = METRICS[c.metric].scale
        fb, fn = geometric_mean(np.exp(lb)) * scale, geometric_mean(np.exp(ln)) * scale
        if sp is None or sp.df < MIN_SPREAD_DF:
            df = 0 if sp is None else sp.df
            est = estimate_of(change_test(lb, ln, sp), fb, fn, lb.size, ln.size, sp, False) if sp else None
            out.append(Tested(est, None, f"{_runs(lb.size, 'baseline')}, {_runs(ln.size, 'new')}: "
                                         f"a spread on {df:.0f} degrees of freedom; need {MIN_SPREAD_DF}", True))
            continue
        test = change_test(lb, ln, sp, t.confidence)
        out.append(Tested(estimate_of(test, fb, fn, lb.size, ln.size, sp), test, ""))
    return out


def _one_each(c: Candidate, found: WithinRun | str, t: StatSettings, rows: int) -> Tested:
    """One run each side: tested against a stated spread, else against the maximum spread (``inproc.compare.bound``),
    else (no maximum) the within-run interval only. ``rows``: how many rows the maximum judges together."""
    if not isinstance(found, WithinRun):
        return Tested(None, None, found)
    w: WithinRun = found
    stated = t.run_spread.get(c.metric)
    if stated is None and t.max_spread is not None:
        test, need, alarm = bound_test(w.ratio, w.within, t.confidence, t.max_spread, rows)
        est = Estimate(w.ratio, w.within, BLOCK_BOOTSTRAP, alarm, w.n_base, w.n_new, w.base_figure, w.new_figure,
                       w.within, t.max_spread, f"--max-spread {t.max_spread * 100:g}%", test.p_change,
                       test.at_least(t.threshold_confidence), need)
        return Tested(est, test, "", alarm=alarm)
    if stated is None:
        est = Estimate(w.ratio, w.within, BLOCK_BOOTSTRAP, False, w.n_base, w.n_new, w.base_figure, w.new_figure,
                       w.within)
        return Tested(est, None, f"one run each side: within-run interval {w.within.low:.3f}–{w.within.high:.3f} only; "
                                 f"state --run-spread, or compare against a baseline of several runs", True)
    test, wide = stated_test(w, stated, t.confidence)
    sp = Spread(stated.log_sd, float("inf"), stated.source)
    est = estimate_of(test, w.base_figure, w.new_figure, w.n_base, w.n_new, sp, test=BLOCK_BOOTSTRAP, within=w.within)
    return Tested(est, test, "")


def shown(base: Sequence[DecodeEntry], new: Sequence[DecodeEntry], metric: str, t: StatSettings) -> Estimate | None:
    """The ratio of a cell that is not judged, shown where one run each side has the metric (never a verdict)."""
    if len(base) != 1 or len(new) != 1:
        return None
    w = within_run(base[0], new[0], metric, t)
    if not isinstance(w, WithinRun):
        return None
    return Estimate(w.ratio, w.within, BLOCK_BOOTSTRAP, False, w.n_base, w.n_new, w.base_figure, w.new_figure, w.within)


def tested_rows(cands: Sequence[Candidate], t: StatSettings, several: bool) -> list[Tested]:
    """Every candidate's outcome; ``several``: a side holds more than one run."""
    if several:
        return _between(cands, t)
    found = [within_run(c.base[0], c.new[0], c.metric, t) for c in cands]
    rows = sum(isinstance(w, WithinRun) for w in found)
    return [_one_each(c, w, t, rows) for c, w in zip(cands, found)]


def alarms(tested: Sequence[Tested], alpha: float = NIGHT_ALPHA) -> list[bool]:
    """Which tested rows are alarms, under one alarm rate over all of them (untested rows: False; rows judged by the
    maximum spread carry their own, already shared over the rows by Bonferroni)."""
    idx = [k for k, x in enumerate(tested) if x.test is not None and x.alarm is None]
    hit = night_alarms([tested[k].test.p_change for k in idx], alpha)
    out = [False] * len(tested)
    for k, h in zip(idx, hit):
        out[k] = bool(h)
    for k, x in enumerate(tested):
        if x.alarm is not None:
            out[k] = x.alarm
    return out
