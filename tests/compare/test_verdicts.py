"""Verdicts on saved results files (real CPU runs, see tests/fixtures/compare/make.py): each kind, and why."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from inproc import types as st
from inproc.compare.estimate import Estimate, StatSettings
from inproc.compare.samples import BETWEEN_RUNS, BLOCK_BOOTSTRAP, SubWindowing
from inproc.compare.stats import Interval, RunSpread
from inproc.compare.verdicts import (INDICATIVE, FASTER, MISSING, NEW, NOT_COMPARABLE, NOT_SIGNIFICANT, SLOWER, STATUS_CHANGED,
                                     CompareSettings, compare_runs, judge)
from inproc.errors import UsageError
from inproc.measure.judge import Verdict
from inproc.record.io import load_results
from tests.conftest import FIXTURES

HERE = FIXTURES / "compare"
RUN1, RUN2, RUN3, HOG, SEQS2 = (load_results(HERE / f"{n}.json") for n in ("run-1", "run-2", "run-3", "hog", "seqs2"))


def rows_by(c):
    return {(r.key, r.metric): r for r in c.rows}


def test_a_run_against_itself_changes_nothing():
    c = compare_runs([RUN1], [RUN1])
    rows = rows_by(c)
    assert len(c.rows) == 4 * 3 and c.exit_code == 0 and not c.regressions
    judged = [r for r in c.rows if r.verdict != NOT_COMPARABLE]
    assert all(r.verdict == NOT_SIGNIFICANT and r.estimate.ratio == pytest.approx(1.0) for r in judged)
    assert all(r.estimate.interval.low <= 1.0 <= r.estimate.interval.high for r in judged)
    # At C=1 a 1 s window holds one or two requests: TTFT has too few samples to test.
    ttft = rows[("256x1", "ttft")]
    assert ttft.verdict == NOT_COMPARABLE and "too few samples" in ttft.reason and ttft.estimate is None
    assert [(g.metric, g.ratio, g.cells) for g in c.geomeans] == [("tok_s", pytest.approx(1.0), 4),
                                                                 ("tbt", pytest.approx(1.0), 4),
                                                                 ("ttft", pytest.approx(1.0), 2)]


def test_each_figure_is_the_cells_own():
    c = compare_runs([RUN1], [RUN2])
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


def test_cpu_hogs_make_every_cell_slower_and_exit_1():
    c = compare_runs([RUN1], [HOG])
    slower = {r.key for r in c.rows if r.verdict == SLOWER}
    assert slower == {"256x1", "256x4", "1024x1", "1024x4"} and c.exit_code == 1
    for r in c.rows:
        if r.metric == "tok_s":
            assert r.verdict == SLOWER and r.estimate.ratio < 0.5 and r.estimate.interval.high < 1
            assert r.reason == f"{1 / r.estimate.ratio:.2f}x slower{INDICATIVE}"
    assert c.geomeans[0].ratio < 0.5
    back = compare_runs([HOG], [RUN1])  # the other way round: faster, nothing regressed
    assert {r.verdict for r in back.rows} == {FASTER, NOT_COMPARABLE} and back.exit_code == 0


def test_same_build_pairs_are_never_a_regression():
    # Issue 22's check: a same-build one-against-one compare is not a regression, either way round.
    for a, b in ((RUN1, RUN2), (RUN1, RUN3), (RUN2, RUN3)):
        for base, new in ((a, b), (b, a)):
            c = compare_runs([base], [new])
            assert c.exit_code == 0 and not any(r.verdict == SLOWER for r in c.rows)


def test_within_run_noise_alone_would_call_run_to_run_drift_a_change():
    # run-2 -> run-3 at 1K x 4: tok/s 5.3 % down, and the block bootstrap inside the windows excludes 1;
    # the spread between runs of this build (9.5 % per run, the stated default) is larger, so it is not a change.
    row = rows_by(compare_runs([RUN2], [RUN3]))[("1024x4", "tok_s")]
    assert row.estimate.within.high < 1 and not row.estimate.significant and 0.94 < row.estimate.ratio < 0.95
    assert row.verdict == NOT_SIGNIFICANT and row.reason == "1.06x slower, within the run-to-run spread (9.5% per run)"
    # With a stated spread of 0 (the within-run interval alone) it is one, and the threshold decides.
    zero = StatSettings(run_spread={m: RunSpread(0.0, 8, "test") for m in ("tok_s", "tbt", "ttft")})
    strict = rows_by(compare_runs([RUN2], [RUN3], CompareSettings(tests=zero)))[("1024x4", "tok_s")]
    assert strict.verdict == SLOWER and strict.reason == f"{1 / row.estimate.ratio:.2f}x slower{INDICATIVE}"
    wide = rows_by(compare_runs([RUN2], [RUN3], CompareSettings(threshold=0.1, tests=zero)))[("1024x4", "tok_s")]
    assert wide.verdict == NOT_SIGNIFICANT and wide.reason == "1.06x slower, within the 10% threshold"


def test_threshold_is_a_factor_in_the_metrics_direction():
    def est(ratio, significant=True):
        return Estimate(ratio, Interval(ratio * 0.99, ratio * 1.01), BETWEEN_RUNS, significant, 10, 10)

    assert judge(est(1 / 1.06), "tok_s", 0.05) == (SLOWER, "1.06x slower")  # tok/s down 5.7 %
    assert judge(est(1 / 1.04), "tok_s", 0.05)[0] == NOT_SIGNIFICANT
    assert judge(est(1.06), "tbt", 0.05) == (SLOWER, "1.06x slower")  # a time up is slower
    assert judge(est(1.06), "tok_s", 0.05) == (FASTER, "1.06x faster")
    assert judge(est(1 / 1.06), "ttft", 0.05) == (FASTER, "1.06x faster")
    assert judge(est(2.0, significant=False), "tbt", 0.05) == (NOT_SIGNIFICANT, "within the noise")
    assert judge(est(1.01), "tbt", 0.05) == (NOT_SIGNIFICANT, "1.01x slower, within the 5% threshold")


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
    assert rows[("2048x4", "ttft")].reason == f"Over capacity in both; {only}"
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


def test_a_baseline_of_runs_uses_the_spread_between_them():
    c = compare_runs([RUN1, RUN2], [RUN3])
    assert {r.estimate.test for r in c.rows} == {BETWEEN_RUNS}
    assert all(r.verdict == NOT_SIGNIFICANT and (r.estimate.n_base, r.estimate.n_new) == (2, 1) for r in c.rows)
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
    same = rows_by(compare_runs([SEQS2], [SEQS2]))
    for metric in ("tok_s", "tbt", "ttft"):
        r = same[("256x4", metric)]
        assert r.verdict == NOT_SIGNIFICANT and r.reason.endswith("; queued in both: 2 running, 2 waiting")
    slow = compare_runs([SEQS2], [_stretched(SEQS2, 2.0)])
    rows = rows_by(slow)
    assert {rows[("256x4", m)].verdict for m in ("tok_s", "tbt")} == {SLOWER} and slow.exit_code == 1
    # TTFT here is 4 requests, 2 served at once (~9 ms) and 2 after the first finished (~1.4 s): their
    # median sits between the two groups, and the bootstrap says it cannot be told (an interval over 100x).
    ttft = rows[("256x4", "ttft")].estimate
    assert ttft.ratio == pytest.approx(2.0) and not ttft.significant and ttft.interval.high / ttft.interval.low > 100
    assert rows[("256x4", "tok_s")].estimate.ratio == pytest.approx(0.5)
    assert rows[("256x4", "tbt")].reason == f"2.00x slower{INDICATIVE}; queued in both: 2 running, 2 waiting"
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
