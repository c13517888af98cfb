"""The noise-aware oracle: is a candidate revision like the good one, like the bad one, or neither yet?

Every test here is compare's (``inproc.compare``): a side's figure is the geometric mean of
its child runs' Total tok/s, the within-run interval of new ÷ base is compare's seeded block
bootstrap over the runs' sub-windows (:func:`~inproc.compare.stats.bootstrap_ratio`), and the
run-to-run spread is added as compare adds a stated one (:func:`~inproc.compare.estimate.stated_test`:
the within-run interval widened in quadrature, the change tested as known, df = ∞). For
R_base and R_new runs a side, the spread of one run, σ, enters as σ·√((1/R_base + 1/R_new)/2),
so that compare's √2 of one run against one gives σ·√(1/R_base + 1/R_new).

σ is the stated ``--run-spread`` (compare's one run against one with a stated spread). With
``--run-spread learn`` it is learned from the bisect's own repeated runs (the good revision
is measured in every pair) once they give it on ``MIN_SPREAD_DF`` degrees of freedom
(:func:`learned_spread`); until then the stated default. Learned or not, the spread the runs
show is reported beside the one used: on a machine whose load swings (a child at 20 tok/s,
the next at 670, the same code) a learned spread is so wide that no revision is decided in a
few pairs, while the stated one keeps deciding on the regression's half-way point.

**The regression** (:class:`Reference`) is bad against good, measured at the start: it
must be a slowdown compare would call (an alarm at ``NIGHT_ALPHA`` whose size lies beyond
the threshold with the threshold confidence, :func:`~inproc.compare.verdicts.judge_test`).
Its size d (the slowdown as a log) and its signature define "bad".

**A candidate** against the good runs around it (:func:`decide`), with the slowdown's
interval [lo, hi] (as logs, at the confidence):

- hi < d/2: **good** — the change is less than half the regression's, with confidence (a
  change compare would call slower or faster is named in its note: another change);
- lo > d/2 and the signature is the regression's: **bad**;
- lo > d/2 with another signature: **other** — slower for another reason, not the regression
  (for the search it is not bad);
- else **undecided**: another pair is measured, up to the cap; then **insufficient data**.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from inproc.bisect.runs import RunSample, pooled
from inproc.bisect.signature import Signature, signature
from inproc.compare.estimate import WithinRun, stated_test
from inproc.compare.spread import MIN_SPREAD_DF, NIGHT_ALPHA, ChangeTest, moderated_spreads, residual_ss
from inproc.compare.stats import Interval, RunSpread, bootstrap_ratio, geometric_mean
from inproc.compare.verdicts import FASTER, SLOWER, judge_test

GOOD, BAD, OTHER, UNDECIDED, INSUFFICIENT, SKIPPED = "good", "bad", "other", "undecided", "insufficient data", "skipped"


@dataclass(frozen=True)
class OracleSettings:
    """How sure the oracle must be, and how long it may try."""

    run_spread: float = 0.10  # σ of one child's log Total tok/s (stated)
    learn: bool = False  # use the spread the bisect's own runs show, once it rests on MIN_SPREAD_DF
    confidence: float = 0.95
    threshold: float = 0.05  # the regression must exceed this, as compare's threshold
    max_pairs: int = 3  # pairs (good, candidate) a revision gets before it is insufficient data
    resamples: int = 2000
    seed: int = 0


@dataclass(frozen=True)
class Change:
    """New against base on Total tok/s: the ratio, its interval (within-run widened by the spread), the test."""

    ratio: float
    interval: Interval
    test: ChangeTest
    spread: float
    spread_source: str
    n_base: int
    n_new: int

    @property
    def slowdown(self) -> tuple[float, float, float]:
        """(log slowdown, its low, its high): a slower new run is above 0."""
        return -math.log(self.ratio), -math.log(self.interval.high), -math.log(self.interval.low)


def learned_spread(groups: Sequence[Sequence[float]], stated: float, learn: bool = True) -> tuple[float, str]:
    """(σ, its source): with ``learn``, the spread between runs of one revision (log tok/s, each group runs of
    one revision) once it rests on ``MIN_SPREAD_DF`` degrees of freedom; else the stated one, with what the runs show."""
    ss, df = residual_ss([np.log(np.asarray(g, dtype=float)) for g in groups])
    found = moderated_spreads([ss], [df], "repeated runs of one revision")[0] if df > 0 else None
    if learn and found is not None and df >= MIN_SPREAD_DF:
        return found.log_sd, found.source
    shown = f"the runs show {found.log_sd * 100:.0f} % on {df} degrees of freedom" if found else "no repeated runs yet"
    return stated, f"stated --run-spread {stated * 100:g}% ({shown})"


def change(base: Sequence[RunSample], new: Sequence[RunSample], spread: float, source: str,
           s: OracleSettings) -> Change:
    """New against base, tested as compare tests one run against one with a stated spread.

    The ratio is that of the sides' geometric means of their runs' figures (compare's figure
    of several runs): pooling the runs' sub-windows would weigh a slow run by its longer
    seconds, and on a loaded machine one child can be ten times slower than the next. The
    within-run interval is the block bootstrap's of the pooled sub-windows, moved to that ratio.
    """
    pb, pn = pooled(list(base)), pooled(list(new))
    within = bootstrap_ratio(pb, pn, s.resamples, s.confidence, s.seed)
    pooled_ratio = pn.statistic() / pb.statistic()
    fb, fn = geometric_mean([r.tok_s for r in base]), geometric_mean([r.tok_s for r in new])
    shift = (fn / fb) / pooled_ratio
    w = WithinRun(fn / fb, Interval(within.low * shift, within.high * shift), pb.n, pn.n, fb, fn)
    scaled = spread * math.sqrt((1 / len(base) + 1 / len(new)) / 2)
    test, wide = stated_test(w, RunSpread(scaled, 0, source), s.confidence)
    return Change(fn / fb, wide, test, spread, source, len(base), len(new))


@dataclass(frozen=True)
class Reference:
    """The regression being bisected: bad against good, and its signature."""

    change: Change
    verdict: str  # compare's verdict of it (slower: a regression to bisect)
    reason: str
    signature: Signature | None

    @property
    def size(self) -> float:
        """d: the regression's slowdown as a log (above 0 when bad is slower)."""
        return self.change.slowdown[0]


def reference(good: Sequence[RunSample], bad: Sequence[RunSample], spread: float, source: str,
              s: OracleSettings) -> Reference:
    c = change(good, bad, spread, source, s)
    verdict, reason = judge_test(c.test, "tok_s", s.threshold, c.test.p_change <= NIGHT_ALPHA)
    sig = signature(_anatomies(good), _anatomies(bad), c.ratio)
    return Reference(c, verdict, reason, sig)


def regressed(ref: Reference) -> bool:
    return ref.verdict == SLOWER


@dataclass(frozen=True)
class Decision:
    verdict: str  # GOOD, BAD, OTHER or UNDECIDED
    change: Change
    signature: Signature | None
    note: str  # in words: why


def decide(ref: Reference, good: Sequence[RunSample], cand: Sequence[RunSample], spread: float, source: str,
           s: OracleSettings) -> Decision:
    """The candidate's runs against the good runs measured around them (see the module's rules)."""
    c = change(good, cand, spread, source, s)
    _, lo, hi = c.slowdown
    half = ref.size / 2
    sig = signature(_anatomies(good), _anatomies(cand), c.ratio)
    shown = f"tok/s {c.ratio:.3f}x the good revision's ({c.interval.low:.3f}–{c.interval.high:.3f})"
    mid = f"half the regression, {math.exp(-half):.3f}x"
    if hi < half:
        verdict, reason = judge_test(c.test, "tok_s", s.threshold, c.test.p_change <= NIGHT_ALPHA)
        other = f"; a change of its own against the spread used: {reason}" if verdict in (SLOWER, FASTER) else ""
        return Decision(GOOD, c, sig, f"{shown}: above {mid}{other}")
    if lo > half:
        if sig is None or ref.signature is None or sig.same_kind(ref.signature):
            return Decision(BAD, c, sig, f"{shown}: below {mid}" + (f"; {sig.describe()}" if sig else ""))
        return Decision(OTHER, c, sig, f"{shown}, but another kind of change: {sig.describe()} (the regression: "
                                       f"{ref.signature.describe()})")
    return Decision(UNDECIDED, c, sig, f"{shown}: the interval holds {mid}")


def _anatomies(runs: Sequence[RunSample]):
    return [r.anatomy for r in runs if r.anatomy is not None]
