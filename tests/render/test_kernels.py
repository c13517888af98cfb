"""The kernel breakdown in the reports: a saved run given simulated kernel passes whose figures are known."""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from inproc.kernels.categories import CATEGORIES
from inproc.record.io import load_results
from inproc.record.summarize import kernel_summary
from inproc.render.html import render_html
from inproc.render.markdown import render_markdown
from inproc.render.svg import t
from inproc.render.text import WIDTH, render_matrix
from tests.conftest import FIXTURES
from tests.compare.test_kernels import with_kernels
from tests.sim.kernels import PassSettings, attach

RUN = load_results(FIXTURES / "compare" / "run-1.json")


def run_with_kernels(seed: int = 1):
    return with_kernels(RUN, PassSettings(), np.random.default_rng(seed))


def section(md: str) -> str:
    return md.split("## Kernels\n", 1)[1].split("\n## ", 1)[0]


def test_markdown_shows_each_category_per_step_with_its_share_and_the_sum_beside_the_step():
    rec = run_with_kernels()
    text = section(render_markdown(rec))
    e = rec.decode[1]
    s = kernel_summary(e)
    by, total = s.ns_by_category(), s.total_ns()
    row = next(line for line in text.splitlines() if line.startswith("| 256 × 4 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    head = [c.strip() for c in text.split("\n| Cell |", 1)[1].split("\n", 1)[0].strip("|").split("|")]
    assert head[:-3] == [c for c in CATEGORIES if c != "moe"]  # no cell ran a MoE kernel: no column
    for cat, cell in zip(head[:-3], cells[1:]):
        assert cell == f"{by[cat] / 1e6:.2f} ({by[cat] / total * 100:.0f} %)"
    rows = e.trace.kernels.steps
    step_ms = float(np.mean(e.trace.steps.t_end_s[rows] - e.trace.steps.t_start_s[rows])) * 1e3
    assert cells[-3:] == [f"{total / 1e6:.2f}", f"{step_ms:.2f}", f"{total / 1e6 / step_ms * 100:.0f} %"]
    assert "- 256 × 4: nvjet_tst_128x256_64x4_1x2_h_bz_coopB_TNT (gemm) 3." in text
    assert "- 256 × 4: some_unmatched_kernel 2 %" in text  # the unmatched names, for the rule table
    assert "- **Kernel categories**: A name is matched against an ordered table of rules" in text
    assert "Host-bound" not in text


def test_a_pass_covering_less_than_half_the_step_says_host_bound():
    rec = run_with_kernels()
    e = rec.decode[0]
    t = e.trace.kernels
    small = replace(t, device_ns=t.device_ns // 1000)  # microseconds of kernels in a ms-long step
    rec = replace(rec, decode=(attach(e, small), *rec.decode[1:]))
    text = section(render_markdown(rec))
    assert "> **Host-bound:** 256 × 1: the kernels cover 0 % of the step's own time, below 50 %" in text
    assert text.count("Host-bound:") == 1 and "(host-bound)" in text
    assert "the kernels cover 0 % of the step" in render_html(rec)


def test_html_draws_stacked_bars_one_chart_per_context_with_the_step_time():
    rec = run_with_kernels()
    html = render_html(rec)
    part = html.split("<h2>Kernels</h2>", 1)[1].split("<h2>", 1)[0]
    charts = re.findall(r'<svg class="chart".*?</svg>', part)
    assert [re.search(r"<title>(.*?)</title>", c).group(1) for c in charts] == ["256 context", "1K context"]
    for e in rec.decode:
        s = kernel_summary(e)
        chart = charts[0] if e.context == 256 else charts[1]
        mine = [(c, float(v)) for c, v in re.findall(
            rf'data-category="(\w+)" data-ms="([\d.e-]+)"><title>[^<]* × {e.concurrency} ·', chart)]
        assert [c for c, _ in mine] == [c for c in CATEGORIES if s.ns_by_category()[c] > 0]
        assert sum(v for _, v in mine) == pytest.approx(s.total_ns() / 1e6)
        assert f'data-step-ms="{s.step_s * 1e3!r}"' in chart
    assert "://" not in html.replace("&#58;//", "")


def test_the_terminal_lists_each_cell_within_its_width_and_no_pass_no_section():
    text = render_matrix(run_with_kernels())
    lines = text.split("Kernels: ms per step by category", 1)[1].splitlines()
    assert all(len(x) <= WIDTH for x in text.splitlines())
    assert sum(x.startswith("  256 × 4: gemm ") for x in lines) == 1
    assert "Kernels" not in render_matrix(RUN) and "## Kernels" not in render_markdown(RUN)
    assert "<h2>Kernels</h2>" not in render_html(RUN)


def test_a_pass_that_could_not_run_shows_its_reason():
    rec = run_with_kernels()
    why = "no kernel pass: the engine's profiler cannot run here (test)"
    rec = replace(rec, decode=(attach(rec.decode[0], None, why), *rec.decode[1:]))
    assert f"- 256 × 1: {why}" in render_markdown(rec)
    assert f"256 × 1: {t(why)}" in render_html(rec) and f"Kernels: 256 × 1: {why}" in render_matrix(rec)
    alone = replace(RUN, decode=(attach(RUN.decode[0], None, why), *RUN.decode[1:]))
    assert section(render_markdown(alone)).strip() == f"- 256 × 1: {why}"


def test_a_pass_that_could_not_file_every_device_activity_says_how_many_in_every_format():
    rec = run_with_kernels()
    e = rec.decode[0]
    lost = replace(e.trace.kernel_pass, device="cuda", filed=230, unfiled=2, unfiled_ns=41_000)
    rec = replace(rec, decode=(replace(e, trace=replace(e.trace, kernel_pass=lost)), *rec.decode[1:]))
    line = ("256 × 1: 2 of 232 device activities not filed to a step (0.041 ms of device time); "
            "its table holds the filed ones only")
    assert f"Device activities not filed to a step:\n\n- {line}" in render_markdown(rec)
    assert " ".join(render_matrix(rec).split()).count(f"Kernels: {line}") == 1  # wrapped at the terminal's width
    assert t(line) in render_html(rec)
    assert "not filed" not in render_markdown(run_with_kernels())  # all filed (or a CPU pass): no line
