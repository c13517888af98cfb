"""The kernel pass, compact: per-step category sums, the names kept, the steps' own time, and its storage."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from inproc.compare.samples import SubWindowing
from inproc.kernels.categories import CATEGORIES
from inproc.kernels.summary import TOP_NAMES, TOP_OTHER, KernelSummary, summarize
from inproc.kernels.table import KernelTable
from inproc.record.compact import CellAnatomy
from inproc.record.io import load_results
from inproc.record.summarize import anatomy_of
from inproc.record.baseline import record_from_summary
from inproc.record.summary import summary_json
from tests.conftest import FIXTURES
from tests.sim.kernels import attach


def table(rows) -> KernelTable:
    """From (step, name, category, ns) rows, one call each."""
    step, name, cat, ns = zip(*rows)
    return KernelTable(np.array(step), tuple(name), tuple(cat), np.ones(len(rows), dtype=np.int64), np.array(ns))


def test_per_step_sums_by_category_and_the_steps_own_time():
    t = table([(5, "a", "gemm", 100), (5, "b", "gemm", 50), (5, "c", "attention", 30),
               (7, "a", "gemm", 120), (7, "c", "attention", 10), (7, "d", "other", 4)])
    durations = np.arange(10, dtype=float) / 1000  # step i took i ms
    s = summarize(t, durations)
    gemm, attn, other = (CATEGORIES.index(c) for c in ("gemm", "attention", "other"))
    assert s.steps == 2 and s.per_step_ns[:, gemm].tolist() == [150, 120] and s.per_step_ns[:, attn].tolist() == [30, 10]
    assert s.per_step_ns[:, other].tolist() == [0, 4] and s.per_step_ns.sum() == t.device_ns.sum()
    assert s.ns_by_category() == pytest.approx(t.ns_per_step_by_category())
    assert s.step_s == pytest.approx((0.005 + 0.007) / 2)  # rows 5 and 7 of the step trace, not the first two
    assert s.coverage() == pytest.approx(s.total_ns() / 6e6)
    assert [n for n, _, _ in s.top_names()] == ["a", "b", "c", "d"] and s.top_names("attention") == [("c", "attention", 20.0)]
    assert summarize(t).step_s is None and summarize(t).coverage() is None


def test_the_top_names_and_the_top_unmatched_ones_are_kept():
    rows = [(0, f"k{i}", "gemm", 1000 - i) for i in range(TOP_NAMES + 20)]
    rows += [(0, f"u{i}", "other", 10 - i / 100) for i in range(TOP_OTHER + 5)]
    s = summarize(table(rows))
    assert s.names[:TOP_NAMES] == tuple(f"k{i}" for i in range(TOP_NAMES))
    assert s.names[TOP_NAMES:] == tuple(f"u{i}" for i in range(TOP_OTHER))  # unmatched names, for the rule table


def test_round_trip_and_a_category_another_version_adds_or_drops():
    s = summarize(table([(0, "a", "gemm", 100), (1, "a", "gemm", 80), (1, "m", "memory", 7)]), np.array([1e-3, 2e-3]))
    back = KernelSummary.from_dict(json.loads(json.dumps(s.to_dict())))
    assert np.array_equal(back.per_step_ns, s.per_step_ns) and back.names == s.names and back.step_s == s.step_s
    d = s.to_dict()
    d["categories"] = list(reversed(d["categories"]))  # columns are read by name
    flipped = KernelSummary.from_dict(d)
    assert np.array_equal(flipped.per_step_ns, s.per_step_ns[:, ::-1])
    d["categories"] = [("future" if c == "memory" else c) for c in CATEGORIES]  # one a later version renamed
    renamed = KernelSummary.from_dict(d)
    assert renamed.ns_by_category()["memory"] == 0 and renamed.ns_by_category()["gemm"] == 90


def test_a_summary_keeps_the_kernel_pass_and_an_older_one_loads_without():
    rec = load_results(FIXTURES / "compare" / "run-1.json")
    e = rec.decode[0]
    rows = e.trace.steps.t_end_s.size
    t = table([(rows - 2, "a", "gemm", 3_000_000), (rows - 1, "a", "gemm", 2_000_000)])
    rec = replace(rec, decode=(attach(e, t), *rec.decode[1:]))
    data = json.loads(json.dumps(summary_json(rec, "run-1.json", SubWindowing())))
    back = record_from_summary(data, "summary")
    kept = anatomy_of(back.decode[0], back.capacity).kernels
    assert kept.per_step_ns[:, CATEGORIES.index("gemm")].tolist() == [3e6, 2e6]
    steps = e.trace.steps
    assert kept.step_s == pytest.approx(float(np.mean((steps.t_end_s - steps.t_start_s)[rows - 2:])))
    assert anatomy_of(back.decode[1], back.capacity).kernels is None
    del data["cells"][e.key]["anatomy"]["kernels"]  # a summary kept before the kernel pass existed
    assert CellAnatomy.from_dict(data["cells"][e.key]["anatomy"]).kernels is None


def test_a_step_of_the_pass_no_kernel_ran_in_counts_zero():
    t = table([(5, "a", "gemm", 100), (7, "a", "gemm", 120)])
    s = summarize(t, np.arange(10, dtype=float) / 1000, np.arange(5, 8))  # the pass: rows 5, 6 and 7
    assert s.steps == 3 and s.per_step_ns[:, CATEGORIES.index("gemm")].tolist() == [100, 0, 120]
    assert s.step_s == pytest.approx(0.006) and s.top_names() == [("a", "gemm", pytest.approx(220 / 3))]
