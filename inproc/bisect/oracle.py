"""The noise-aware oracle: is a candidate revision like the good one, like the bad one, or neither yet?

Every figure is a child run's Total tok/s; every test is compare's test on logs
(:func:`inproc.compare.spread.change_test`: the difference of the sides' mean log tok/s,
its standard error σ·√(1/R_base + 1/R_new) from the spread σ of one run, Student's t on
σ's degrees of freedom). The spread and the runs a call may use come from the oracle's
check of its own reference (:mod:`inproc.bisect.agree`); each look at a growing number of
pairs spends its share of the error rate by the sequential rule (:mod:`inproc.bisect.looks`).

**The regression** (:class:`Reference`) is bad against good, the runs of both that agree
with their revision's level: it must be what compare calls slower (an alarm, here at the
look's share of ``NIGHT_ALPHA``, whose size lies beyond the threshold with the threshold
confidence, :func:`~inproc.compare.verdicts.judge_test`). Its size d (the slowdown as a
log), its interval and its signature define "bad".

**A candidate** against the good revision's level (:func:`decide`), with the slowdown's
interval [lo, hi] at the confidence 1 − the look's share of ``call_alpha``. "Good" is
held against half the regression's lower bound d_low (one-sided ``REFERENCE_CONFIDENCE``),
not half its estimate d: a regression called on few noisy runs was called because it came
out large, and half that estimate could lie beyond a bad candidate's whole slowdown. "Bad"
is held against half the estimate d/2, which lies farther from a good candidate's 0:

- 0 ≤ hi < d_low/2, each run on the good revision's level (:func:`~inproc.bisect.agree.off_from`:
  two runs slowed alike are no level of their own): **good**. Not surely faster than the
  good revision either: a machine that slowed the good runs around it looks the same;
- lo > d/2, and so against the good runs measured right beside its own (a slow stretch of
  the machine moves both alike, and the good level alone would not see it; a drifting
  machine only slows runs, so no such check is needed for "good"), lo not beyond the
  regression's upper bound (surely slower than the bad revision is the machine), each run
  on the bad revision's level (the good one's less d), and the signature is the
  regression's: **bad**;
- lo > d/2 with another signature: **other** — slower for another reason, not the
  regression (for the search it is not bad);
- else **undecided**: another pair is measured, up to the cap; then **insufficient data**.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from inproc.bisect.agree import SpreadInUse, off_from
from inproc.bisect.looks import look_alpha
from inproc.bisect.runs import RunSample
from inproc.bisect.signature import Signature, signature
from inproc.compare.spread import NIGHT_ALPHA, RESOLUTION, ChangeTest, Spread, change_test
from inproc.compare.stats import Interval, t_quantile
from inproc.compare.verdicts import SLOWER, judge_test

GOOD, BAD, OTHER, UNDECIDED, INSUFFICIENT, SKIPPED = "good", "bad", "other", "undecided", "insufficient data", "skipped"
#: The bad revision's level rests on at least this many of its runs that agree: two runs the machine slowed alike
#: can agree by chance, and a bad level set by them makes every candidate look good.
MIN_REFERENCE_RUNS = 3
#: The confidence of the regression's lower bound d_low that candidates are held against: a regression called
#: on few noisy runs is called because its estimate came out large, so half its estimate can exceed half the truth.
REFERENCE_CONFIDENCE = 0.975
#: A candidate is called on at least this many of its runs that agree with one another: one run slowed by the
#: machine is as slow as a regression, and only a second run shows it is not the revision's level.
MIN_CALL_RUNS = 2


@dataclass(frozen=True)
class OracleSettings:
    """How sure the oracle must be, where its spread comes from, and how long it may try."""

    run_spread: float | None = None  # σ of one child's log Total tok/s given by a source; None: learned from the runs
    spread_df: float = math.inf  # the given σ's degrees of freedom (∞: stated)
    spread_source: str = ""  # where the given σ comes from, in words
    call_alpha: float = 0.05  # the chance that a candidate's call (over all its looks) is wrong
    threshold: float = 0.05  # the regression must exceed this, as compare's threshold
    max_pairs: int = 8  # pairs a revision gets (the looks of the sequential rule) before it is insufficient data
    budget_s: float | None = None  # seconds of child runs the bisect may spend; None: no limit but max_pairs
    retry_disturbed: int = 2  # a disturbed run (never counted) is measured again up to this many times

    def given(self) -> SpreadInUse | None:
        """The spread a source gave (None: learn it from the runs)."""
        if self.run_spread is None:
            return None
        return SpreadInUse(max(self.run_spread, RESOLUTION), self.spread_df, self.spread_source or f"--run-spread {self.run_spread * 100:g}%")


@dataclass(frozen=True)
class Change:
    """New against base on Total tok/s: the ratio (of geometric means), its interval, the test, the spread used."""

    test: ChangeTest
    spread: SpreadInUse
    n_base: int
    n_new: int

    @property
    def ratio(self) -> float:
        return self.test.ratio

    @property
    def interval(self) -> Interval:
        return Interval(*self.test.interval())

    @property
    def ratio_text(self) -> str:
        """The ratio and its interval as the log and the report print them: "0.817x (0.664–1.006)"."""
        return f"{self.ratio:.3f}x ({self.interval.low:.3f}–{self.interval.high:.3f})"

    @property
    def slowdown(self) -> tuple[float, float, float]:
        """(log slowdown, its low, its high): a slower new run is above 0."""
        low, high = self.test.interval()
        return -self.test.log_ratio, -math.log(high), -math.log(low)


def change(base: Sequence[RunSample], new: Sequence[RunSample], spread: SpreadInUse, confidence: float) -> Change:
    """New against base: compare's test on the runs' log tok/s with the spread in use."""
    t = change_test(np.log([r.tok_s for r in base]), np.log([r.tok_s for r in new]),
                    Spread(spread.sigma, spread.df, spread.source), confidence)
    return Change(t, spread, len(base), len(new))


@dataclass(frozen=True)
class Reference:
    """The regression being bisected: bad against good, and its signature (``change`` None: never measured)."""

    change: Change | None
    verdict: str  # compare's verdict of it (slower: a regression to bisect), or INSUFFICIENT
    reason: str
    signature: Signature | None

    @property
    def size(self) -> float:
        """d: the regression's slowdown as a log (above 0 when bad is slower)."""
        return self.change.slowdown[0]

    @property
    def at_least(self) -> float:
        """d_low: the regression's slowdown (a log) exceeded with ``REFERENCE_CONFIDENCE`` (one-sided)."""
        t = self.change.test
        return -t.log_ratio - t_quantile(REFERENCE_CONFIDENCE, t.df) * t.se


def reference(good: Sequence[RunSample], bad: Sequence[RunSample], spread: SpreadInUse, look: int,
              s: OracleSettings) -> Reference:
    """Bad against good at look ``look``: an alarm at the look's share of ``NIGHT_ALPHA``, beyond the threshold."""
    alpha = look_alpha(look, s.max_pairs, NIGHT_ALPHA)
    c = change(good, bad, spread, 1 - alpha)
    verdict, reason = judge_test(c.test, "tok_s", s.threshold, c.test.p_change <= alpha)
    reason += f" (look {look} of {s.max_pairs}, alarm at p ≤ {alpha:.3g})"
    return Reference(c, verdict, reason, signature(_anatomies(good), _anatomies(bad), c.ratio))


def regressed(ref: Reference) -> bool:
    return ref.verdict == SLOWER


@dataclass(frozen=True)
class Decision:
    verdict: str  # GOOD, BAD, OTHER or UNDECIDED
    change: Change
    signature: Signature | None
    note: str  # in words: why


def decide(ref: Reference, good: Sequence[RunSample], cand: Sequence[RunSample], spread: SpreadInUse, look: int,
           s: OracleSettings, around: Sequence[RunSample] = ()) -> Decision:
    """The candidate's runs against the good revision's level (``good``), and for "bad" also against the good runs
    measured right beside its own (``around``), at look ``look`` (the module's rules)."""
    alpha = look_alpha(look, s.max_pairs, s.call_alpha)
    c = change(good, cand, spread, 1 - alpha)
    _, lo, hi = c.slowdown
    half, mid_bad = ref.at_least / 2, ref.size / 2
    sig = signature(_anatomies(good), _anatomies(cand), c.ratio)
    shown = (f"tok/s {c.ratio:.3f}x the good revision's ({c.interval.low:.3f}–{c.interval.high:.3f} at "
             f"{(1 - alpha) * 100:.2f} %, look {look} of {s.max_pairs})")
    mid = f"half the regression's lower bound, {math.exp(-half):.3f}x"
    logs, level = np.log([r.tok_s for r in cand]), float(np.mean(np.log([r.tok_s for r in good])))
    if half <= 0:
        return Decision(UNDECIDED, c, sig, f"{shown}: on the runs as they are now the regression's lower bound "
                                           "reaches no change (the machine moved since it was called): not called")
    if 0 <= hi < half and off_from(logs, level, len(good), spread.sigma):
        return Decision(UNDECIDED, c, sig, f"{shown}: like the good revision on the whole, but a run of its lies off "
                                           "the good revision's level: not called")
    if 0 <= hi < half:
        return Decision(GOOD, c, sig, f"{shown}: above {mid}")
    if hi < 0:
        return Decision(UNDECIDED, c, sig, f"{shown}: surely faster than the good revision (the machine, or a change "
                                           "of its own): not called")
    if lo > mid_bad and lo > ref.change.slowdown[2]:
        return Decision(UNDECIDED, c, sig, f"{shown}: surely slower than the bad revision too (the machine, or "
                                           "another change): not called")
    if lo > mid_bad and around and change(around, cand, spread, 1 - alpha).slowdown[1] <= mid_bad:
        return Decision(UNDECIDED, c, sig, f"{shown}: like the bad revision against the good level, but not against "
                                           "the good runs beside its own (the machine slowed them too): not called")
    if lo > mid_bad and off_from(logs, level - ref.size, len(good), spread.sigma):
        return Decision(UNDECIDED, c, sig, f"{shown}: like the bad revision on the whole, but a run of its lies off "
                                           "the bad revision's level: not called")
    if lo > mid_bad:
        if sig is None or ref.signature is None or sig.same_kind(ref.signature):
            return Decision(BAD, c, sig, f"{shown}: below half the regression, {math.exp(-mid_bad):.3f}x"
                                         + (f"; {sig.describe()}" if sig else ""))
        return Decision(OTHER, c, sig, f"{shown}, but another kind of change: {sig.describe()} (the regression: "
                                       f"{ref.signature.describe()})")
    return Decision(UNDECIDED, c, sig, f"{shown}: the interval holds {mid}")


def _anatomies(runs: Sequence[RunSample]):
    return [r.anatomy for r in runs if r.anatomy is not None]
