"""Which kernels a change sits in: saved runs given simulated kernel passes whose truth is known."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from inproc.compare.kernels import MATERIAL, cell_change, describe, judge
from inproc.compare.samples import BETWEEN_RUNS, BLOCK_BOOTSTRAP
from inproc.compare.estimate import StatSettings
from inproc.compare.stats import RunSpread, block_length, t_quantile
from inproc.compare.verdicts import CompareSettings, compare_runs
from inproc.history.explain import explain
from inproc.record.io import load_results
from inproc.render.compare.data import COMPARE_JSON_VERSION, render_compare_json
from inproc.render.compare.formats import render_compare_markdown, render_compare_text
from inproc.render.compare.page import render_compare_html
from tests.conftest import FIXTURES
from tests.sim.kernels import PassSettings, attach, simulate_pass, simulate_runs, table_of

HERE = FIXTURES / "compare"
RUNS = [load_results(HERE / f"run-{i}.json") for i in (1, 2, 3)]
GEMM = "nvjet_tst_128x256_64x4_1x2_h_bz_coopB_TNT"


def with_kernels(rec, s: PassSettings, rng: np.random.Generator, skip: str = ""):
    """The run with a simulated kernel pass in every decode cell (but ``skip``), on its last 16 step rows."""
    cells = []
    for e in rec.decode:
        first = max(0, e.trace.steps.t_end_s.size - s.steps)  # a short trace: rows past its end (no step time)
        cells.append(e if e.key == skip else attach(e, table_of(simulate_pass(s, rng), first)))
    return replace(rec, decode=tuple(cells))


def step_ms(rec, key: str) -> float:
    e = next(x for x in rec.decode if x.key == key)
    rows = e.trace.kernels.steps
    return float(np.mean(e.trace.steps.t_end_s[rows] - e.trace.steps.t_start_s[rows])) * 1e3


def test_a_planted_gemm_shift_is_named_gemm_with_its_kernels_and_an_interval_around_it():
    rng = np.random.default_rng(7)
    base = [with_kernels(r, PassSettings(), rng) for r in RUNS]
    new = [with_kernels(r, PassSettings(plant="gemm", plant_ms=1.5), rng) for r in RUNS]
    c = compare_runs(base, new)
    assert len(c.kernels) == 4
    for k in c.kernels:
        assert k.test == BETWEEN_RUNS and (k.n_base, k.n_new) == (3, 3)
        assert [x.category for x in k.named] == ["gemm"]
        gemm = k.named[0]
        assert gemm.low_ms < 1.5 < gemm.high_ms and gemm.low_ms > 0
        # The kernels named are the planted category's, in the share the simulation gave them (0.7 and 0.3).
        shifts = k.shifts("gemm")
        assert shifts[0].name == GEMM and shifts[0].delta_ms == pytest.approx(0.7 * gemm.delta_ms, rel=1e-3)
        # The step's own time is the trace's, over the rows the table names: the same rows on both sides here.
        assert k.base_step_ms == pytest.approx(np.mean([step_ms(r, f"{k.context}x{k.concurrency}") for r in base]))
        assert k.step_delta_ms == pytest.approx(0.0)
        assert k.material_ms == pytest.approx(MATERIAL * k.base_step_ms)
    line = describe(c.kernels[0])
    assert line.startswith("the change sits in gemm: +1.") and f"; {GEMM} +1." in line and "(3 and 3 runs)" in line


def test_clean_against_clean_names_no_category():
    rng = np.random.default_rng(8)
    base = [with_kernels(r, PassSettings(), rng) for r in RUNS]
    new = [with_kernels(r, PassSettings(), rng) for r in RUNS]
    c = compare_runs(base, new)
    assert len(c.kernels) == 4 and not any(k.named for k in c.kernels)
    assert all(describe(k).startswith("no kernel category moved beyond its noise; largest ") for k in c.kernels)


def test_one_run_each_side_uses_the_profiled_steps_and_names_only_against_a_stated_spread():
    rng = np.random.default_rng(9)
    base = with_kernels(RUNS[0], PassSettings(), rng)
    new = with_kernels(RUNS[1], PassSettings(plant="gemm", plant_ms=2.0), rng)
    c = compare_runs([base], [new])
    k = c.kernels[0]
    assert k.test == BLOCK_BOOTSTRAP and k.indicative and (k.n_base, k.n_new) == (16, 16)
    assert not k.judged and not k.named  # as compare's rows: one run cannot show how much a whole run varies
    assert describe(k).startswith("within-run only, no category named: largest gemm +")
    assert "state --run-spread" in render_compare_text(c)
    stated = compare_runs([base], [new], CompareSettings(tests=StatSettings(
        run_spread={m: RunSpread(0.01, 0, "test") for m in ("tok_s", "tbt", "ttft")})))
    k1 = stated.kernels[0]
    assert k1.judged and k1.run_spread == 0.01 and [x.category for x in k1.named] == ["gemm"]
    assert "16 and 16 profiled steps, one run each side, stated run spread 1%" in describe(k1)
    # The stated spread widens every category's interval: √2·σ·(its baseline time) in quadrature.
    g0, g1 = (next(x for x in ch.categories if x.category == "gemm") for ch in (k, k1))
    half0, half1 = (g0.high_ms - g0.low_ms) / 2, (g1.high_ms - g1.low_ms) / 2
    q = t_quantile(0.975, 2 * (-(-16 // block_length(16))) - 2)  # Student's t on both sides' blocks less 2
    assert half1 == pytest.approx(np.hypot(half0, q * np.sqrt(2) * 0.01 * g0.base_ms), rel=1e-9)


def test_a_cell_whose_run_lacks_a_kernel_pass_is_left_out():
    rng = np.random.default_rng(10)
    base = [with_kernels(r, PassSettings(), rng, skip="256x4" if i == 1 else "") for i, r in enumerate(RUNS)]
    new = [with_kernels(r, PassSettings(), rng) for r in RUNS]
    c = compare_runs(base, new)
    assert sorted(f"{k.context}x{k.concurrency}" for k in c.kernels) == ["1024x1", "1024x4", "256x1"]
    assert compare_runs(RUNS, RUNS).kernels == ()  # no pass anywhere: no section
    assert "Kernels:" not in render_compare_text(compare_runs(RUNS, RUNS))


def test_every_format_carries_it():
    rng = np.random.default_rng(11)
    base = [with_kernels(r, PassSettings(), rng) for r in RUNS]
    new = [with_kernels(r, PassSettings(plant="gemm", plant_ms=1.5), rng) for r in RUNS]
    c = compare_runs(base, new)
    doc = json.loads(render_compare_json(c))
    assert doc["version"] == COMPARE_JSON_VERSION == 7
    cell = doc["kernels"][0]
    assert cell["named"] == ["gemm"] and cell["test"] == BETWEEN_RUNS and cell["kernels"]["gemm"][0]["name"] == GEMM
    gemm = next(x for x in cell["categories"] if x["category"] == "gemm")
    assert gemm["named"] and gemm["low_ms"] > 0 and {x["category"] for x in cell["categories"]} >= {"attention", "memory"}
    for text in (render_compare_text(c), render_compare_markdown(c),
                 render_compare_html(c, base, new, "base.json", "new.json", explain(base, new, c))):
        assert "the change sits in gemm: +1." in text


def test_the_rule_needs_both_an_alarm_and_a_material_size():
    rng = np.random.default_rng(12)
    base = simulate_runs(PassSettings(step_sd=0.001, run_sd=0.0005), 5, rng)
    tiny = simulate_runs(PassSettings(step_sd=0.001, run_sd=0.0005, plant="gemm", plant_ms=0.05), 5, rng)
    k = judge([cell_change((1, 1), base, tiny)])[0]
    gemm = next(x for x in k.categories if x.category == "gemm")
    assert gemm.low_ms > 0 and gemm.p_change < 1e-4  # sure of it ...
    assert abs(gemm.delta_ms) < k.material_ms and not k.named  # ... but below 2 % of the step: not named
    big = simulate_runs(PassSettings(step_sd=0.001, run_sd=0.0005, plant="gemm", plant_ms=0.5), 5, rng)
    assert [x.category for x in judge([cell_change((1, 1), base, big)])[0].named] == ["gemm"]
