"""Draft acceptance from step rows: per-position sums, the conditional shares, the interval's coverage on
simulated drafts whose true mean length is known, and the flag of a forced length the engine did not apply."""
from __future__ import annotations

import numpy as np
import pytest

from inproc.measure.acceptance import acceptance_figures, length_interval
from inproc.measure.steps import SPEC_INTS, SPEC_POSITIONS, StepTrace, spec_row
from inproc.drafts import SpecStep

K = 3


def _drafts(rng, steps: int, per_step: int, p: float) -> list[SpecStep]:
    """Steps of ``per_step`` full-length drafts of K tokens, each accepted position by position with chance p."""
    out = []
    for _ in range(steps):
        accepted = np.zeros(per_step, int)
        alive = np.ones(per_step, bool)
        for _ in range(K):
            alive &= rng.random(per_step) < p
            accepted += alive
        out.append(SpecStep(per_step, per_step * K, int(accepted.sum()),
                            tuple(int((accepted > i).sum()) for i in range(K)), (per_step,) * K))
    return out


def _trace(steps: list[SpecStep | None]) -> StepTrace:
    rows = np.array([spec_row(s) if s is not None else (-1,) * len(SPEC_INTS) for s in steps], np.int64)
    return StepTrace.of(t_end_s=np.arange(len(steps), dtype=float), **{n: rows[:, i] for i, n in enumerate(SPEC_INTS)})


def test_per_position_sums_and_conditional_shares():
    steps = [SpecStep(2, 6, 3, (2, 1, 0), (2, 2, 2)), None, SpecStep(2, 5, 4, (2, 1, 1), (2, 2, 1)),
             SpecStep(0, 0, 0, (0, 0, 0), (0, 0, 0))]
    a = acceptance_figures(_trace(steps), 0, 3)
    # The uncounted row (None) is left out, not read as -1s: would fail if the -1s were summed.
    assert (a.drafts, a.draft_tokens, a.accepted_tokens) == (4, 11, 7)
    assert a.accepted_at == (4, 2, 1) and a.drafted_at == (4, 4, 3)
    assert sum(a.accepted_at) == a.accepted_tokens and sum(a.drafted_at) == a.draft_tokens
    assert a.mean_length == pytest.approx(1 + 7 / 4)
    # Reached: position 1 all drafted; then the drafts accepted up to the position before, capped by those drafted.
    assert a.reached_at == (4, 4, 2) and a.conditional == pytest.approx((1.0, 0.5, 0.5))
    assert acceptance_figures(_trace(steps), 1, 1) is None  # rows that counted no drafts at all: no figures


def test_positions_past_the_kept_columns_are_dropped_but_totals_stay():
    k = SPEC_POSITIONS + 2
    step = SpecStep(1, k, k, (1,) * k, (1,) * k)
    a = acceptance_figures(_trace([step, step]), 0, 1)
    assert len(a.accepted_at) == SPEC_POSITIONS and a.accepted_tokens == 2 * k and a.mean_length == 1 + k


@pytest.mark.parametrize("p, per_step, steps", [(0.7, 4, 60), (0.3, 1, 25), (0.9, 8, 200), (0.05, 1, 100), (0.98, 2, 100)])
def test_interval_holds_the_true_mean_length_at_its_confidence(p, per_step, steps):
    # Simulated drafts with a known truth: E[L] = 1 + p + p^2 + p^3. Would fail: steps taken as single
    # drafts (too narrow), a normal quantile with few blocks, the variance without the ratio's residuals,
    # or no pseudo-drafts at the extremes (0.88 at p = 0.05).
    rng = np.random.default_rng(7)
    truth = 1 + sum(p ** i for i in range(1, K + 1))
    trials, held = 600, 0
    drafts = np.full(steps, per_step)
    for _ in range(trials):
        # Per draft: accepted = the run of successes before the first rejection, at most K.
        accepted = np.cumprod(rng.random((steps, per_step, K)) < p, axis=2).sum(axis=(1, 2))
        low, high = length_interval(drafts, accepted, K)
        held += low <= truth <= high
    assert 0.93 <= held / trials <= 0.995, held / trials


def test_a_forced_length_outside_the_interval_is_flagged():
    rng = np.random.default_rng(3)
    trace = _trace(_drafts(rng, 80, 4, 0.1))  # measured about 1.1
    flagged = acceptance_figures(trace, 0, 79, forced_length=3.0)
    assert flagged.not_applied.startswith("the engine did not apply the forced acceptance (measured 1.0")
    assert " for 3.0; 95 % interval " in flagged.not_applied
    applied = acceptance_figures(trace, 0, 79, forced_length=round(flagged.mean_length, 2))
    assert applied.not_applied == ""
    assert acceptance_figures(trace, 0, 79).not_applied == ""  # natural: nothing to hold it against
