"""What a comparison carries besides its verdicts (saved CPU runs, tests/fixtures/compare): each row's statuses on
both sides, the header of each side, the refusal naming every difference under the sides' own labels, and the
reasons of the cells that are not compared, by their exact words."""
from __future__ import annotations

from dataclasses import replace

import pytest

from inproc import types as st
from inproc.compare.verdicts import (MISSING, NEW, NOT_COMPARABLE, STATUS_CHANGED, CompareSettings, GeoMean, Side,
                                     compare_runs)
from inproc.errors import UsageError
from inproc.measure.judge import Verdict
from inproc.record.io import load_results
from tests.conftest import FIXTURES

HERE = FIXTURES / "compare"
RUN1, RUN2, RUN3, HOG, SEQS2 = (load_results(HERE / f"{n}.json") for n in ("run-1", "run-2", "run-3", "hog", "seqs2"))
SEQS = CompareSettings(allow_different=("profile.engine_args.max-num-seqs",))


def with_status(rec, status: str, reason: str, keys=None):
    """``rec`` with its decode cells (those of ``keys``, or all) given another status."""
    return replace(rec, decode=tuple(replace(e, verdict=Verdict(status, reason, ())) if keys is None or e.key in keys
                                     else e for e in rec.decode))


def statuses(c, metric="tok_s"):
    return {r.key: (r.verdict, r.reason, r.base_status, r.new_status) for r in c.rows if r.metric == metric}


def test_every_row_carries_each_sides_status_and_an_absent_side_none():
    """max_num_seqs 2 against 8: a queued cell became Valid (its reason is the baseline's, the one that was not
    Valid), cells only on one side have "" for the other; a judged row has both."""
    got = statuses(compare_runs([SEQS2], [RUN1], SEQS))
    assert got == {
        "256x1": ("not significant", "within the runs' own noise (--max-spread 25 %)", st.VALID, st.VALID),
        "256x4": (STATUS_CHANGED, "Requests queued → Valid: max_num_seqs=2 < C=4; up to 2 waiting, 2.00 of 4 running "
                                  "on average", st.QUEUED, st.VALID),
        "1024x1": (NEW, "only in the new run (Valid)", "", st.VALID),
        "1024x4": (NEW, "only in the new run (Valid)", "", st.VALID),
        "2048x1": (MISSING, "only in the baseline (Valid)", st.VALID, ""),
        "2048x4": (MISSING, "only in the baseline (Requests queued)", st.QUEUED, "")}
    hog = compare_runs([RUN1], [HOG])
    assert all((r.base_status, r.new_status) == (st.VALID, st.VALID) for r in hog.rows)
    # A slower row keeps its own words before the spread it would take to be noise.
    assert statuses(hog)["256x1"][1] == ("3.20x slower, at least 2.354x with 80 % confidence; noise only if runs "
                                         "varied by 29 % or more, beyond --max-spread 25 %")


def test_a_status_change_without_a_reason_is_the_two_statuses_alone():
    got = statuses(compare_runs([RUN1], [with_status(RUN2, st.LOOPED, "", keys=("256x4",))]))["256x4"]
    assert got == (STATUS_CHANGED, "Valid → Looped", st.VALID, st.LOOPED)


def test_new_runs_that_disagree_on_a_status_are_named_as_the_new_runs():
    new = [RUN1, with_status(RUN2, st.LOOPED, "planted", keys=("256x4",))]
    got = statuses(compare_runs([RUN3], new), "tbt")["256x4"]
    assert got == (NOT_COMPARABLE, "the new runs disagree: Valid ×1, Looped ×1", st.VALID, "")


def test_a_metric_with_no_judged_cell_has_no_geometric_mean():
    c = compare_runs([RUN1], [with_status(RUN2, st.LOOPED, "planted")])
    assert c.geomeans == tuple(GeoMean(m, None, 0) for m in ("tok_s", "tbt", "ttft"))


def test_each_side_is_described_under_its_label():
    c = compare_runs([RUN1, RUN2], [HOG], base_label="monday", new_label="tuesday")
    assert c.base == Side("monday", 2, "cpu-vllm-tiny-llama", "vllm 0.32.0", (RUN1.created, RUN2.created), 1.0)
    assert c.new == Side("tuesday", 1, "cpu-vllm-tiny-llama", "vllm 0.32.0", (HOG.created,), 1.0)
    assert (compare_runs([RUN1], [HOG]).base.label, compare_runs([RUN1], [HOG]).new.label) == ("baseline", "new")


@pytest.mark.parametrize("labels, first", [({}, "baseline and new"), ({"base_label": "monday", "new_label": "tuesday"},
                                                                      "monday and tuesday")])
def test_the_refusal_names_the_sides_and_the_difference(labels, first):
    with pytest.raises(UsageError) as e:
        compare_runs([RUN1], [SEQS2], **labels)
    assert str(e.value) == (f"{first} are not comparable: profile.engine_args.max-num-seqs (8 vs 2) differ. Pass "
                            "--allow-different KEY for each difference you accept (e.g. --allow-different "
                            "profile.engine_args.max-num-seqs).")


def test_the_refusal_lists_every_difference_apart():
    cpu, gpu = load_results(FIXTURES / "cpu-vllm-small.json"), load_results(FIXTURES / "gpu-like.json")
    with pytest.raises(UsageError) as e:
        compare_runs([cpu], [gpu])
    assert str(e.value).startswith(
        "baseline and new are not comparable: cpu.model (Intel(R) Xeon(R) Processor vs (unset)); gpu.driver ((unset) "
        "vs 570.00); gpu.model (none vs NVIDIA H200, NVIDIA H200); plan.prompt_mode (distinct vs shared); "
        "profile.engine_args.load-format (dummy vs (unset)) differ. ")
