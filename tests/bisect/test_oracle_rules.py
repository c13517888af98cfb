"""The oracle's decisions (``inproc.bisect.oracle``) on runs whose tok/s is set exactly, with a stated spread of
3 % on ∞ df: every interval is then a normal one, so each bound is derived by hand from scipy's normal quantile
(the look's level from ``inproc.bisect.looks``), and a candidate is placed well inside each of the module's cases.

The regression (``ref``): 3 good runs at 1,000 tok/s against 3 bad ones at 500, at look 1 of 8: d = log 2, its
se 0.03·√(2/3); its lower bound d_low = d − z₀.₉₇₅·se ≈ 0.645; half of it ≈ 0.322 (the "good" mark, 0.724x) and
half of d ≈ 0.347 (the "bad" mark, 0.707x). A candidate's 2 runs against 4 good runs: se 0.03·√(3/4)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from inproc.bisect.agree import SpreadInUse
from inproc.bisect.looks import look_alpha
from inproc.bisect.oracle import (BAD, GOOD, OTHER, UNDECIDED, OracleSettings, change, decide, reference, regressed)
from inproc.bisect.runs import RunSample
from inproc.compare.spread import NIGHT_ALPHA, RESOLUTION
from inproc.compare.verdicts import NOT_SIGNIFICANT, SLOWER
from inproc.record.compact import CellAnatomy

SIGMA = 0.03
SPREAD = SpreadInUse(SIGMA, math.inf, "stated")
S = OracleSettings()
SE_REF, SE_CAND = SIGMA * math.sqrt(2 / 3), SIGMA * math.sqrt(3 / 4)
D = math.log(2)
D_LOW = D - float(norm.ppf(0.975)) * SE_REF
ALPHA_2 = 0.05 / 14  # look 2 of 8 (before the last): α / (2 (K − 1))
Z_2 = float(norm.ppf(1 - ALPHA_2 / 2))


def anatomy(step_s: float, host_s: float) -> CellAnatomy:
    return CellAnatomy(steps=80, window_s=80 * step_s, output_tokens=160, step_s=step_s, host_s=host_s)


def at(tok_s: float, n: int, a: CellAnatomy | None = None) -> list[RunSample]:
    """n runs of exactly ``tok_s``."""
    return [RunSample(np.array([tok_s]), np.array([1.0]), a) for _ in range(n)]


def spread_at(*tok_s: float, a: CellAnatomy | None = None) -> list[RunSample]:
    return [RunSample(np.array([x]), np.array([1.0]), a) for x in tok_s]


GOOD_A, BAD_A = anatomy(0.003, 0.0005), anatomy(0.006, 0.0005)  # the regression doubles the forward time
REF = reference(at(1000, 3, GOOD_A), at(500, 3, BAD_A), SPREAD, 1, S)
REF_BARE = reference(at(1000, 3), at(500, 3), SPREAD, 1, S)  # no anatomy: no signature
GOOD_RUNS = at(1000, 4, GOOD_A)


def carries(d, ratio: float) -> bool:
    """Every decision carries the change it was made on (the log prints it at each look) and the candidate's
    signature where its runs and the good ones have an anatomy."""
    return d.change.ratio == pytest.approx(ratio, rel=1e-12) and d.signature is not None


def note_head(ratio: float) -> str:
    low, high = ratio * math.exp(-Z_2 * SE_CAND), ratio * math.exp(Z_2 * SE_CAND)
    return f"tok/s {ratio:.3f}x the good revision's ({low:.3f}–{high:.3f} at {100 * (1 - ALPHA_2):.2f} %, look 2 of 8)"


def test_the_regression_is_bad_against_good_with_its_size_and_lower_bound():
    """Would fail: the sides swapped (a speed-up), the lower bound at another confidence or with the se's sign."""
    assert regressed(REF) and REF.verdict == SLOWER
    assert REF.size == pytest.approx(D, rel=1e-12) and REF.at_least == pytest.approx(D_LOW, rel=1e-9)
    alpha = 0.05 / 14
    assert REF.reason.endswith(f" (look 1 of 8, alarm at p ≤ {alpha:.3g})")
    assert REF.reason.startswith("2.00x slower, at least ")
    last = reference(at(1000, 3), at(500, 3), SPREAD, 8, S)
    assert last.reason.endswith(" (look 8 of 8, alarm at p ≤ 0.025)")  # the last look: half of NIGHT_ALPHA
    assert NIGHT_ALPHA == 0.05
    # The reference's interval is at 1 − the look's level: its upper slowdown bound d + z·se.
    assert REF.change.slowdown[2] == pytest.approx(D + float(norm.ppf(1 - alpha / 2)) * SE_REF, rel=1e-9)


@pytest.mark.parametrize("log_slowdown, verdict", [(0.06, SLOWER), (0.045, NOT_SIGNIFICANT), (-0.06, "faster")])
def test_a_regression_must_lie_beyond_the_threshold_with_its_confidence(log_slowdown, verdict):
    """σ = 0.5 %: a 6 % slowdown (log 0.06) is at least e^(0.06 − z₀.₈·0.005·√(2/3)) = 1.058x > 1.05 slower; a
    log 0.045 one is an alarm but at most 1.046x sure (would fail: another threshold, or a test at the wrong
    side); a speed-up is never the regression."""
    tight = SpreadInUse(0.005, math.inf, "stated")
    ref = reference(at(1000, 3), at(1000 * math.exp(-log_slowdown), 3), tight, 1, S)
    assert ref.verdict == verdict and regressed(ref) is (verdict == SLOWER)


def test_no_change_is_no_alarm_and_not_regressed():
    ref = reference(at(1000, 3), at(1000, 3), SPREAD, 1, S)
    assert ref.verdict == NOT_SIGNIFICANT and not regressed(ref) and ref.reason.startswith("within the noise")


def test_a_candidate_like_the_good_revision_is_good_and_says_its_interval_and_the_mark():
    """At 1,000 tok/s its slowdown interval is ±z·se ≈ ±0.075, inside [0, d_low/2)."""
    d = decide(REF, GOOD_RUNS, at(1000, 2, GOOD_A), SPREAD, 2, S)
    assert d.verdict == GOOD and carries(d, 1.0)
    assert d.note == note_head(1.0) + f": above half the regression's lower bound, {math.exp(-D_LOW / 2):.3f}x"
    mid, low, high = d.change.slowdown
    assert mid == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(Z_2 * SE_CAND, rel=1e-9)
    assert low == pytest.approx(-Z_2 * SE_CAND, rel=1e-9)


def test_a_good_looking_candidate_with_a_run_off_the_good_level_is_not_called():
    """Runs at 1,000·e^±0.2: their mean is the good level, but each lies 0.2 from it, beyond the band
    z₀.₉₉₇₅·σ·√(1 + π/8) ≈ 0.099 (would fail: the check dropped, or made against the bad level)."""
    d = decide(REF, GOOD_RUNS, spread_at(1000 * math.exp(0.2), 1000 * math.exp(-0.2), a=GOOD_A), SPREAD, 2, S)
    assert d.verdict == UNDECIDED and carries(d, 1.0)
    assert d.note == note_head(1.0) + (": like the good revision on the whole, but a run of its lies off the good "
                                       "revision's level: not called")
    near = decide(REF, GOOD_RUNS, spread_at(1000 * math.exp(0.05), 1000 * math.exp(-0.05)), SPREAD, 2, S)
    assert near.verdict == GOOD  # 0.05 off: inside the band


def test_a_candidate_surely_faster_than_good_is_not_called():
    """1,300 tok/s: slowdown −0.262, its upper bound −0.262 + 0.075 < 0."""
    d = decide(REF, GOOD_RUNS, at(1300, 2, GOOD_A), SPREAD, 2, S)
    assert d.verdict == UNDECIDED and carries(d, 1.3) and d.note == note_head(1.3) + (
        ": surely faster than the good revision (the machine, or a change of its own): not called")


def test_a_candidate_like_the_bad_revision_is_bad_with_the_regressions_signature():
    """500 tok/s: slowdown log 2, its lower bound 0.618 > d/2 = 0.347, not beyond the regression's upper bound; its
    runs on the bad level (the good one's less d); the forward time doubled as the regression's did."""
    d = decide(REF, GOOD_RUNS, at(500, 2, BAD_A), SPREAD, 2, S)
    assert d.verdict == BAD and carries(d, 0.5) and d.signature.same_kind(REF.signature)
    assert d.note == note_head(0.5) + f": below half the regression, {math.exp(-D / 2):.3f}x; {d.signature.describe()}"
    bare = decide(REF_BARE, at(1000, 4), at(500, 2), SPREAD, 2, S)  # no anatomy anywhere: no signature to add
    assert bare.verdict == BAD and bare.signature is None
    assert bare.note == note_head(0.5) + f": below half the regression, {math.exp(-D / 2):.3f}x"


def test_a_signature_on_one_side_only_does_not_stop_a_bad_call():
    """The regression measured without anatomy has no signature: a slow candidate with one is bad (would fail:
    ``and`` for ``or``, or a signature demanded)."""
    d = decide(REF_BARE, GOOD_RUNS, at(500, 2, BAD_A), SPREAD, 2, S)
    assert REF_BARE.signature is None and d.signature is not None
    assert d.verdict == BAD and d.note.endswith("; " + d.signature.describe())


def test_a_candidate_slow_for_another_reason_is_other():
    """500 tok/s with the host time grown instead of the forward time."""
    d = decide(REF, GOOD_RUNS, at(500, 2, anatomy(0.006, 0.0035)), SPREAD, 2, S)
    assert d.verdict == OTHER and carries(d, 0.5) and not d.signature.same_kind(REF.signature)
    assert d.note == note_head(0.5) + (f", but another kind of change: {d.signature.describe()} (the regression: "
                                       f"{REF.signature.describe()})")


def test_a_candidate_surely_slower_than_the_bad_revision_is_not_called():
    """250 tok/s: its lower bound log 4 − 0.075 is past the regression's upper bound log 2 + 0.071."""
    d = decide(REF, GOOD_RUNS, at(250, 2, BAD_A), SPREAD, 2, S)
    assert d.verdict == UNDECIDED and carries(d, 0.25) and d.note == note_head(0.25) + (
        ": surely slower than the bad revision too (the machine, or another change): not called")


def test_a_bad_looking_candidate_is_checked_against_the_good_runs_beside_it():
    """Good runs measured beside it at 600 tok/s (the machine slowed them too): against them its slowdown is
    log 1.2 = 0.18, lower bound under d/2: not called; at 700, log 1.4 = 0.336 ± 0.087: its lower bound is under
    d/2 = 0.347 though its upper one is not, still not called (would fail: the upper bound read). Beside it at
    1,000: bad."""
    d = decide(REF, GOOD_RUNS, at(500, 2, BAD_A), SPREAD, 2, S, around=at(600, 2))
    assert d.verdict == UNDECIDED and carries(d, 0.5) and d.note == note_head(0.5) + (
        ": like the bad revision against the good level, but not against the good runs beside its own (the "
        "machine slowed them too): not called")
    assert decide(REF, GOOD_RUNS, at(500, 2, BAD_A), SPREAD, 2, S, around=at(700, 2)).verdict == UNDECIDED
    assert decide(REF, GOOD_RUNS, at(500, 2, BAD_A), SPREAD, 2, S, around=at(1000, 2)).verdict == BAD


def test_a_bad_looking_candidate_with_a_run_off_the_bad_level_is_not_called():
    d = decide(REF, GOOD_RUNS, spread_at(500 * math.exp(0.2), 500 * math.exp(-0.2), a=BAD_A), SPREAD, 2, S)
    assert d.verdict == UNDECIDED and carries(d, 0.5) and d.note == note_head(0.5) + (
        ": like the bad revision on the whole, but a run of its lies off the bad revision's level: not called")


def test_a_candidate_half_way_is_undecided_and_names_the_mark():
    """At e^(−d/2) of the good tok/s (0.707x) its interval [0.272, 0.422] holds both marks."""
    ratio = math.exp(-D / 2)
    d = decide(REF, GOOD_RUNS, at(1000 * ratio, 2, GOOD_A), SPREAD, 2, S)
    assert d.verdict == UNDECIDED and carries(d, ratio)
    assert d.note == note_head(ratio) + f": the interval holds half the regression's lower bound, {math.exp(-D_LOW / 2):.3f}x"


def test_a_regression_whose_lower_bound_reaches_no_change_calls_nothing():
    """Good at 1,000 against bad at 1,000·e^−0.03: d_low = 0.03 − 1.96·0.0245 < 0; even a candidate like good is
    not called."""
    weak = reference(at(1000, 3), at(1000 * math.exp(-0.03), 3), SPREAD, 1, S)
    assert weak.at_least < 0
    d = decide(weak, GOOD_RUNS, at(1000, 2, GOOD_A), SPREAD, 2, S)
    assert d.verdict == UNDECIDED and carries(d, 1.0) and d.note.endswith(
        ": on the runs as they are now the regression's lower bound reaches no change (the machine moved since it "
        "was called): not called")


def test_the_change_is_of_geometric_means_with_its_interval_in_words():
    """Base 1,000 and 1,000·e^0.2 (geometric mean 1,000·e^0.1), new 800: ratio 0.8·e^−0.1, its interval at 95 %
    ± 1.96·σ·√(1/2 + 1)."""
    c = change(spread_at(1000, 1000 * math.exp(0.2)), at(800, 1), SPREAD, 0.95)
    ratio = 0.8 * math.exp(-0.1)
    h = float(norm.ppf(0.975)) * SIGMA * math.sqrt(1.5)
    assert c.ratio == pytest.approx(ratio, rel=1e-12) and (c.n_base, c.n_new) == (2, 1) and c.spread is SPREAD
    assert (c.interval.low, c.interval.high) == pytest.approx((ratio * math.exp(-h), ratio * math.exp(h)), rel=1e-9)
    assert c.ratio_text == f"{ratio:.3f}x ({ratio * math.exp(-h):.3f}–{ratio * math.exp(h):.3f})"
    assert c.slowdown == pytest.approx((-math.log(ratio), -math.log(ratio) - h, -math.log(ratio) + h), rel=1e-9)


def test_a_given_spread_is_used_as_given_but_never_under_the_resolution():
    assert OracleSettings().given() is None
    assert OracleSettings(run_spread=0.02).given() == SpreadInUse(0.02, math.inf, "--run-spread 2%")
    got = OracleSettings(run_spread=0.0001, spread_df=12, spread_source="the alarm's rows").given()
    assert got == SpreadInUse(RESOLUTION, 12, "the alarm's rows")


def test_the_defaults_are_the_documented_ones():
    """The bisect command's flags take these as their defaults (``inproc bisect --help`` shows them): a call wrong
    at most 5 % of the time, compare's 5 % threshold, 8 pairs, no time budget, two retries of a disturbed run, a
    given spread on ∞ df."""
    s = OracleSettings()
    assert (s.run_spread, s.spread_df, s.spread_source) == (None, math.inf, "")
    assert (s.call_alpha, s.threshold, s.max_pairs, s.budget_s, s.retry_disturbed) == (0.05, 0.05, 8, None, 2)
    assert look_alpha(2, s.max_pairs, s.call_alpha) == ALPHA_2
