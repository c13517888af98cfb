"""Verdicts on saved results files (real CPU runs, see tests/fixtures/compare/make.py): each kind, and why."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np
import pytest

from inproc import types as st
from inproc.compare.estimate import StatSettings
from inproc.compare.samples import BETWEEN_RUNS, BLOCK_BOOTSTRAP, SubWindowing
from inproc.compare.spread import ChangeTest
from inproc.compare.stats import RunSpread
from inproc.compare.verdicts import (INDICATIVE, INSUFFICIENT, FASTER, MISSING, NEW, NOT_COMPARABLE, NOT_RUN_BOTH,
                                     NOT_SIGNIFICANT, SLOWER, STATUS_CHANGED, EXIT_CLEAN, EXIT_UNDECIDED, CompareSettings,
                                     compare_runs, judge_test)
from inproc.errors import UsageError
from inproc.measure.judge import Verdict
from inproc.record.io import load_results
from inproc.record.schema import DecodeEntry
from inproc.render.compare.lines import summary_line
from tests.conftest import FIXTURES

HERE = FIXTURES / "compare"
RUN1, RUN2, RUN3, HOG, SEQS2 = (load_results(HERE / f"{n}.json") for n in ("run-1", "run-2", "run-3", "hog", "seqs2"))


def stated(pct: float) -> CompareSettings:
    """Settings with a run-to-run spread stated for every metric (as --run-spread does)."""
    return CompareSettings(tests=StatSettings(run_spread={m: RunSpread(pct, 0, "test") for m in ("tok_s", "tbt", "ttft")}))


def rows_by(c):
    return {(r.key, r.metric): r for r in c.rows}


def within_only() -> CompareSettings:
    """One run each side judged by nothing: no stated spread and no maximum (the within-run interval only)."""
    return CompareSettings(tests=StatSettings(max_spread=None))


def test_a_run_against_itself_changes_nothing():
    c = compare_runs([RUN1], [RUN1])
    rows = rows_by(c)
    assert len(c.rows) == 4 * 3 and not c.regressions
    # At C=1 a 1 s window holds one or two requests: TTFT has too few samples to test, so not every row is judged.
    ttft = rows[("256x1", "ttft")]
    assert ttft.verdict == NOT_COMPARABLE and "too few samples" in ttft.reason and ttft.estimate is None
    assert sorted((r.key, r.metric) for r in c.undecided) == [("1024x1", "ttft"), ("256x1", "ttft")]
    assert c.exit_code == EXIT_UNDECIDED == 3
    judged = [r for r in c.rows if r.verdict != NOT_COMPARABLE]
    # One run each side, no stated spread: the change needs no run-to-run spread at all to be noise.
    assert all(r.verdict == NOT_SIGNIFICANT and r.estimate.needed_spread == 0 and r.estimate.ratio == pytest.approx(1.0)
               and r.reason == "within the runs' own noise (--max-spread 25 %)" for r in judged)
    assert all(r.estimate.interval.low <= 1.0 <= r.estimate.interval.high for r in judged)
    assert [(g.metric, g.ratio, g.cells) for g in c.geomeans] == [("tok_s", pytest.approx(1.0), 4),
                                                                 ("tbt", pytest.approx(1.0), 4),
                                                                 ("ttft", pytest.approx(1.0), 2)]
    # With no maximum either: the within-run interval only, never a verdict, and not judged.
    alone = compare_runs([RUN1], [RUN1], within_only())
    judged = [r for r in alone.rows if r.verdict != NOT_COMPARABLE]
    assert all(r.verdict == INSUFFICIENT and r.reason.startswith("one run each side: within-run interval")
               and "--run-spread" in r.reason for r in judged)
    assert alone.exit_code == 3 and len(alone.undecided) == 12


def test_each_figure_is_the_cells_own():
    c = compare_runs([RUN1], [RUN2], stated(0.02))
    for (key, metric), r in rows_by(c).items():
        if r.estimate is None:
            continue
        e1, e2 = (next(e for e in rec.decode if e.key == key) for rec in (RUN1, RUN2))
        name = {"tok_s": "total_tok_s", "tbt": "tbt_ms", "ttft": "ttft_ms"}[metric]
        assert r.estimate.base_figure == pytest.approx(getattr(e1.figures, name))
        assert r.estimate.ratio == pytest.approx(getattr(e2.figures, name) / getattr(e1.figures, name))
        assert r.estimate.test == BLOCK_BOOTSTRAP and r.estimate.indicative
        # 1 s windows cut into 0.1 s sub-windows (a tenth of a window under 10 s): about ten units;
        # TTFT's units are the requests.
        if metric in ("tok_s", "tbt"):
            assert 9 <= r.estimate.n_base <= 11
        else:
            assert r.estimate.n_base == sum(1 for q in e1.trace.requests if len(q.token_steps))
        # The interval is the within-run one widened by the run-to-run spread: it holds it.
        w, i = r.estimate.within, r.estimate.interval
        assert i.low < w.low <= r.estimate.ratio <= w.high < i.high


def test_cpu_hogs_make_every_cell_slower_and_exit_1_beyond_a_stated_spread():
    c = compare_runs([RUN1], [HOG], stated(0.10))
    slower = {r.key for r in c.rows if r.verdict == SLOWER}
    assert slower == {"256x1", "256x4", "1024x1", "1024x4"} and c.exit_code == 1
    for r in c.rows:
        if r.metric == "tok_s":
            assert r.verdict == SLOWER and r.estimate.ratio < 0.5 and r.estimate.interval.high < 1
            assert r.reason.startswith(f"{1 / r.estimate.ratio:.2f}x slower, at least ") and r.reason.endswith(INDICATIVE)
            assert 1.05 < r.estimate.at_least < 1 / r.estimate.ratio
    assert c.geomeans[0].ratio < 0.5
    back = compare_runs([HOG], [RUN1], stated(0.10))  # the other way round: faster, nothing regressed
    assert {r.verdict for r in back.rows} == {FASTER, NOT_COMPARABLE} and back.exit_code == 3  # C=1 TTFT: too few
    # Without a stated spread the same pair shows its within-run intervals and does not fail.
    alone = compare_runs([RUN1], [HOG], within_only())
    assert alone.exit_code == 3 and {r.verdict for r in alone.rows} == {INSUFFICIENT, NOT_COMPARABLE}
    assert [r.estimate.ratio for r in alone.rows if r.estimate] == pytest.approx([r.estimate.ratio for r in c.rows
                                                                                  if r.estimate], rel=1e-12)


def test_one_run_against_a_run_many_times_slower_is_slower_beyond_the_maximum_spread():
    # The hog run (other programs' CPU load through every window, 3-26x slower) against a quiet one, one run each
    # side and nothing stated: a row is slower exactly when the spread its change needs to be noise is beyond 25 %.
    c = compare_runs([RUN1], [HOG])
    judged = [r for r in c.rows if r.estimate is not None]
    assert len(judged) == 10 and c.exit_code == 1
    for r in judged:
        need = r.estimate.needed_spread
        assert (r.verdict == SLOWER) == (need > 0.25), r
        assert f"{need * 100:.0f} %" in r.reason and "--max-spread 25 %" in r.reason
    tok = rows_by(c)[("1024x1", "tok_s")]  # 16x slower: noise only if runs varied by 70 % (log sd) or more
    assert tok.estimate.ratio < 0.07 and tok.verdict == SLOWER and tok.estimate.needed_spread > 0.6
    assert tok.reason.endswith(f"noise only if runs varied by {tok.estimate.needed_spread * 100:.0f} % or more, "
                               "beyond --max-spread 25 %")
    # The needed spread is the one at which the change sits on the edge of the row's band: z·√(s_w² + 2σ²).
    from inproc.compare.bound import row_z, within_se
    e = tok.estimate
    z, sw = row_z(10), within_se(e.ratio, e.within, 0.95)
    assert abs(np.log(e.ratio)) == pytest.approx(z * np.hypot(sw, np.sqrt(2) * e.needed_spread))
    # A looser maximum calls fewer rows, all of them the ones needing more than it; the other way round: faster.
    loose = compare_runs([RUN1], [HOG], CompareSettings(tests=StatSettings(max_spread=0.6)))
    assert {r.key for r in loose.rows if r.verdict == SLOWER} < {r.key for r in c.rows if r.verdict == SLOWER}
    assert all(r.estimate.needed_spread > 0.6 for r in loose.rows if r.verdict == SLOWER)
    back = compare_runs([HOG], [RUN1])
    assert not back.regressions and {r.verdict for r in back.rows if r.estimate} == {FASTER, NOT_SIGNIFICANT}


def test_same_build_pairs_are_never_a_regression():
    # A same-build one-against-one compare is not a regression, either way round, at the spread these runs show
    # between them (tok/s 5-7 % a run, see test_a_baseline_of_runs_uses_the_spread_between_them), nor against the
    # default maximum spread (every row needs far less than 25 %).
    for a, b in ((RUN1, RUN2), (RUN1, RUN3), (RUN2, RUN3)):
        for base, new in ((a, b), (b, a)):
            c = compare_runs([base], [new], stated(0.07))
            assert c.exit_code == 3 and not any(r.verdict == SLOWER for r in c.rows)  # 3: C=1's TTFT, too few samples
            d = compare_runs([base], [new])
            assert d.exit_code == 3 and not d.regressions and {r.metric for r in d.undecided} == {"ttft"}
            assert max(r.estimate.needed_spread for r in d.rows if r.estimate) < 0.1


def test_within_run_noise_alone_would_call_run_to_run_drift_a_change():
    # run-2 -> run-3 at 1K x 4: tok/s 5.3 % down, and the block bootstrap inside the windows excludes 1.
    row = rows_by(compare_runs([RUN2], [RUN3], within_only()))[("1024x4", "tok_s")]
    assert row.estimate.within.high < 1 and not row.estimate.significant and 0.94 < row.estimate.ratio < 0.95
    assert row.verdict == INSUFFICIENT and f"{row.estimate.within.high:.3f}" in row.reason
    # With the spread these runs show between them (tok/s 6-7 %) it is within the noise.
    drift = rows_by(compare_runs([RUN2], [RUN3], stated(0.07)))[("1024x4", "tok_s")]
    assert drift.verdict == NOT_SIGNIFICANT and drift.reason == "within the noise"
    # With a stated spread of 0 (the within-run interval alone) it is an alarm, and the threshold with its
    # confidence decides: a 5.6 % change whose 80 % bound lies below 5 % is not called slower.
    strict = rows_by(compare_runs([RUN2], [RUN3], stated(0.0)))[("1024x4", "tok_s")]
    assert strict.estimate.significant and strict.estimate.at_least < 1.05 < 1 / strict.estimate.ratio
    assert strict.verdict == NOT_SIGNIFICANT and "not beyond the 5% threshold with 80 % confidence" in strict.reason
    loose = rows_by(compare_runs([RUN2], [RUN3], CompareSettings(threshold=0.02, tests=stated(0.0).tests)))
    assert loose[("1024x4", "tok_s")].verdict == SLOWER


def test_the_threshold_holds_for_the_change_with_its_confidence_in_the_metrics_direction():
    def t(ratio, se=0.01):
        return ChangeTest(np.log(ratio), se, np.inf, 1e-6, 0.95)

    assert judge_test(t(1 / 1.08), "tok_s", 0.05, True)[0] == SLOWER  # tok/s down 7.4 %: bound 1.067 at 80 %
    assert judge_test(t(1.08), "tbt", 0.05, True)[0] == SLOWER  # a time up is slower
    assert judge_test(t(1.08), "tok_s", 0.05, True)[0] == FASTER
    assert judge_test(t(1 / 1.08), "ttft", 0.05, True)[0] == FASTER
    # 6 % measured, but its 80 % bound (1.06 · e^(−0.84 · 0.02) = 1.042) is not past 5 %: not called.
    verdict, reason = judge_test(t(1.06, se=0.02), "tbt", 0.05, True)
    assert verdict == NOT_SIGNIFICANT and reason.startswith("1.06x slower, not beyond the 5% threshold")
    assert judge_test(t(1.06, se=0.02), "tbt", 0.05, True, threshold_confidence=0.5)[0] == SLOWER
    assert judge_test(t(2.0), "tbt", 0.05, False) == (NOT_SIGNIFICANT, "within the noise")  # no alarm: nothing called
    least = t(1.10, se=0.02).at_least(0.8)
    assert least == pytest.approx(np.exp(np.log(1.10) - 0.8416212335729143 * 0.02))


def test_another_profile_is_refused_with_the_key_named():
    with pytest.raises(UsageError, match=r"profile\.engine_args\.max-num-seqs \(8 vs 2\)"):
        compare_runs([RUN1], [SEQS2])


def test_status_changed_new_and_missing():
    c = compare_runs([RUN1], [SEQS2], CompareSettings(allow_different=("profile.engine_args.max-num-seqs",)))
    rows = rows_by(c)
    queued = rows[("256x4", "tok_s")]
    assert queued.verdict == STATUS_CHANGED and queued.reason.startswith("Valid → Requests queued: max_num_seqs=2 < C=4")
    assert queued.estimate is not None  # the ratio is still shown, never called slower
    assert {rows[("1024x1", m)].verdict for m in ("tok_s", "tbt", "ttft")} == {MISSING}
    assert rows[("2048x4", "tok_s")].verdict == NEW and rows[("2048x4", "tok_s")].reason == "only in the new run (Requests queued)"
    # A cell that stopped being Valid regresses the run (once per cell), not as "slower".
    assert [r.key for r in c.regressions if r.verdict == STATUS_CHANGED] == ["256x4"] and c.exit_code == 1
    assert [d.key for d in c.allowed] == ["profile.engine_args.max-num-seqs"]


def test_throttled_looped_and_failed_cells_are_never_slower():
    gpu = load_results(FIXTURES / "gpu-like.json")  # 256x1 throttled, 256x4 Looped, 2048x1 Error
    rows = rows_by(compare_runs([gpu], [gpu]))
    assert rows[("256x1", "tok_s")].verdict == NOT_COMPARABLE and "throttled in the baseline run" in rows[("256x1", "tok_s")].reason
    only = "only Valid and Requests queued cells are judged"
    assert rows[("256x4", "tok_s")].reason == f"Looped in both; {only}"
    assert rows[("2048x1", "tbt")].reason == f"Error in both; {only}"
    over = rows[("2048x4", "ttft")]  # left out of both by the plan: judged (status unchanged), never undecided
    assert over.verdict == NOT_RUN_BOTH and over.reason == "Over capacity in both: the plan ran it in neither"
    cpu = load_results(FIXTURES / "cpu-vllm-small.json")
    allow = ("gpu", "cpu.model", "plan.prompt_mode", "profile.engine_args.load-format")
    c = compare_runs([cpu], [gpu], CompareSettings(allow_different=allow))
    rows = rows_by(c)
    assert rows[("256x1", "tok_s")].verdict == NOT_COMPARABLE and rows[("256x1", "tok_s")].reason.startswith(
        "throttled in the new run: throttled: GPU 1 hw_thermal_slowdown")
    assert rows[("256x4", "tok_s")].verdict == STATUS_CHANGED and rows[("256x4", "tok_s")].reason.startswith("Valid → Looped")
    assert rows[("2048x1", "tok_s")].reason == "Valid → Error: RuntimeError: fake engine failure"
    assert rows[("2048x10", "tok_s")].verdict == MISSING  # interrupted before it (Pending)
    assert not any(r.verdict == SLOWER for r in c.rows)
    assert sorted(r.key for r in c.regressions) == ["2048x1", "256x4"]


def _with_cell(rec, entry):
    return replace(rec, decode=rec.decode + (entry,))


def test_a_run_with_cells_the_plan_left_out_compared_with_itself_exits_0():
    # A whole matrix compared with itself: its Over capacity cells were never run by either, so nothing is left
    # unjudged. Would fail: such cells counted undecided (every matrix with one exits 3, a quiet self-compare
    # included), or a cell Over capacity in one run and measured in the other called unchanged.
    over = DecodeEntry(2048, 64, Verdict(st.OVER_CAPACITY, "needs 131,072 tokens of KV, the engine has 65,536", ()),
                       reproduce="inproc cell ...")
    tok_tbt = CompareSettings(metrics=("tok_s", "tbt"))  # the C = 1 cells hold too few requests for TTFT
    plain = compare_runs([RUN1], [RUN1], tok_tbt)
    c = compare_runs([_with_cell(RUN1, over)], [_with_cell(RUN1, over)], tok_tbt)
    assert plain.exit_code == c.exit_code == EXIT_CLEAN and not c.undecided
    assert len(c.rows) == len(plain.rows) + 2
    assert {r.verdict for r in c.rows if r.key == "2048x64"} == {NOT_RUN_BOTH}
    assert "2 not run in either" in summary_line(c) and summary_line(c).startswith("No regression (")
    # Measured on one side (a file whose cell was run, then judged Over capacity): not the plan's doing.
    measured = replace(next(e for e in RUN1.decode if e.key == "256x4"), context=2048, concurrency=64,
                       verdict=over.verdict)
    mixed = compare_runs([_with_cell(RUN1, over)], [_with_cell(RUN1, measured)], tok_tbt)
    assert {r.verdict for r in mixed.rows if r.key == "2048x64"} == {NOT_COMPARABLE} and mixed.exit_code == 3
    # Over capacity in the baseline, run in the new one: a status change, not a regression.
    valid = replace(measured, verdict=Verdict(st.VALID, "", ()))
    grown = compare_runs([_with_cell(RUN1, over)], [_with_cell(RUN1, valid)], tok_tbt)
    assert {r.verdict for r in grown.rows if r.key == "2048x64"} == {STATUS_CHANGED} and grown.exit_code == 0


def test_a_baseline_of_runs_uses_the_spread_between_them():
    c = compare_runs([RUN1, RUN2], [RUN3])
    assert {r.estimate.test for r in c.rows} == {BETWEEN_RUNS}
    assert all(r.verdict == NOT_SIGNIFICANT and (r.estimate.n_base, r.estimate.n_new) == (2, 1) for r in c.rows)
    # The spread is learned from these runs: each row's own (one degree of freedom) moderated across the metric's rows.
    for r in c.rows:
        assert r.estimate.spread_source.startswith("learned from 2 baseline runs and 1 new run")
        assert 0.005 < r.estimate.run_spread < 0.5
    row = rows_by(c)[("256x4", "tok_s")]
    base = np.array([next(e for e in r.decode if e.key == "256x4").figures.total_tok_s for r in (RUN1, RUN2)])
    new = next(e for e in RUN3.decode if e.key == "256x4").figures.total_tok_s
    assert row.estimate.ratio == pytest.approx(new / np.sqrt(base.prod()))  # against their geometric mean
    hog = compare_runs([RUN1, RUN2, RUN3], [HOG])
    assert all(r.verdict == SLOWER for r in hog.rows) and hog.exit_code == 1


def test_baseline_runs_that_disagree_on_a_status_are_not_comparable():
    entries = tuple(replace(e, verdict=Verdict(st.LOOPED, "planted", ())) if e.key == "256x4" else e for e in RUN2.decode)
    rows = rows_by(compare_runs([RUN1, replace(RUN2, decode=entries)], [RUN3]))
    assert rows[("256x4", "tbt")].verdict == NOT_COMPARABLE
    assert rows[("256x4", "tbt")].reason == "the baseline runs disagree: Valid ×1, Looped ×1"


def test_sub_windows_by_steps_and_bad_settings():
    steps = compare_runs([RUN1], [RUN2], CompareSettings(metrics=("tok_s",), tests=StatSettings(cutting=SubWindowing(steps=40))))
    # Windows of 114 to 180 steps in 40-step sub-windows (a last one under 20 steps joins the one before).
    assert all(r.metric == "tok_s" and 3 <= r.estimate.n_base <= 4 and 3 <= r.estimate.n_new <= 5 for r in steps.rows)
    for bad, needle in (({"threshold": 1.5}, "150%"), ({"metrics": ("tpot",)}, "'tpot'"),
                        ({"allow_different": ("engine.colour",)}, "'engine.colour'")):
        with pytest.raises(UsageError, match=needle):
            CompareSettings(**bad)


def _stretched(rec, factor: float, keys=("256x4",)):
    """The run with every clock of the given cells stretched by ``factor``: a planted slowdown of the same steps."""
    def stretch(e):
        t = e.trace
        cols = dict(t.steps.columns, t_start_s=t.steps.t_start_s * factor, t_end_s=t.steps.t_end_s * factor)
        reqs = [replace(r, submit_s=r.submit_s * factor) for r in t.requests]
        trace = replace(t, steps=type(t.steps)(cols), requests=reqs, window_open_s=t.window_open_s * factor,
                        window_target_s=t.window_target_s * factor)
        return replace(e, trace=trace)
    return replace(rec, decode=tuple(stretch(e) if e.key in keys else e for e in rec.decode))


def test_queued_cells_are_judged_when_the_same_number_runs():
    allow = CompareSettings(allow_different=("profile.engine_args.max-num-seqs",))
    same = rows_by(compare_runs([SEQS2], [SEQS2], stated(0.05)))
    for metric in ("tok_s", "tbt", "ttft"):
        r = same[("256x4", metric)]
        assert r.verdict == NOT_SIGNIFICANT and r.reason.endswith("; queued in both: 2 running, 2 waiting")
    slow = compare_runs([SEQS2], [_stretched(SEQS2, 2.0)], stated(0.05))
    rows = rows_by(slow)
    assert {rows[("256x4", m)].verdict for m in ("tok_s", "tbt")} == {SLOWER} and slow.exit_code == 1
    # TTFT here is 4 requests, 2 served at once (~9 ms) and 2 after the first finished (~1.4 s): their
    # median sits between the two groups, and the bootstrap says it cannot be told (an interval over 100x).
    ttft = rows[("256x4", "ttft")].estimate
    assert ttft.ratio == pytest.approx(2.0) and not ttft.significant and ttft.interval.high / ttft.interval.low > 100
    assert rows[("256x4", "tok_s")].estimate.ratio == pytest.approx(0.5)
    assert rows[("256x4", "tbt")].reason.startswith("2.00x slower, at least ")
    assert rows[("256x4", "tbt")].reason.endswith(f"{INDICATIVE}; queued in both: 2 running, 2 waiting")
    untouched = {r.metric: r.verdict for r in slow.rows if r.key == "256x1"}  # TTFT: one request, too few
    assert untouched == {"tok_s": NOT_SIGNIFICANT, "tbt": NOT_SIGNIFICANT, "ttft": NOT_COMPARABLE}
    # Another number running (here planted: 3 instead of 2) is another batch: not comparable, and why.
    def running3(e):
        cols = dict(e.trace.steps.columns, num_running=np.full(len(e.trace.steps), 3))
        return replace(e, trace=replace(e.trace, steps=type(e.trace.steps)(cols))) if e.key == "256x4" else e
    other = replace(SEQS2, decode=tuple(running3(e) for e in SEQS2.decode))
    r = rows_by(compare_runs([SEQS2], [other], allow))[("256x4", "tok_s")]
    assert r.verdict == NOT_COMPARABLE
    assert r.reason == "Requests queued in both, not the same queue: 2 running, 2 waiting vs 3 running, 2 waiting"


@dataclass(frozen=True, eq=False)
class DisturbedEntry(DecodeEntry):
    """A recorded cell with the disturbed flag set, as a run that saw other processes' load records it."""

    disturbed: str = ""


def disturb(rec, cause: str):
    """The run with every decode cell flagged disturbed (the figures kept, as the flag keeps them)."""
    entries = tuple(DisturbedEntry(**{f.name: getattr(e, f.name) for f in fields(DecodeEntry)}, disturbed=cause)
                    for e in rec.decode)
    return replace(rec, decode=entries)


def test_a_quiet_run_against_a_disturbed_one_never_exits_0():
    cause = "disturbed: other processes used 1.9 cores of 2 (95 %) during the window"
    loaded = disturb(HOG, cause)  # the hog run's cells, which the other programs' load slowed, flagged
    for base, new in (([RUN1], [loaded]), ([loaded], [RUN1]), ([RUN1, RUN2, RUN3], [loaded])):
        c = compare_runs(base, new)
        assert c.exit_code == 3 and not c.regressions and len(c.undecided) == len(c.rows) == 12
        side = "new" if new[0] is loaded else "baseline"
        assert all(r.verdict == NOT_COMPARABLE and r.reason == f"disturbed in the {side} run: {cause[11:]}"
                   for r in c.rows)
    # Flagged on one cell only: that cell is left out and named; the others are judged (slower: exit 1).
    one = replace(HOG, decode=tuple(disturb(HOG, cause).decode[k] if e.key == "1024x4" else e
                                    for k, e in enumerate(HOG.decode)))
    c = compare_runs([RUN1], [one])
    assert {r.key for r in c.undecided if "disturbed" in r.reason} == {"1024x4"} and c.exit_code == 1
    # The summary names the cells not judged and why.
    from inproc.render.compare.lines import summary_line
    quiet = compare_runs([RUN1], [disturb(RUN2, cause)], CompareSettings(metrics=("tok_s",)))
    assert quiet.exit_code == 3 and summary_line(quiet) == (
        "No regression found, but 4 rows could not be judged (256 x 1, 256 x 4, 1K x 1, 1K x 4: disturbed in the new "
        "run) (4 not comparable).")
