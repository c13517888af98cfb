"""The throughput–interactivity curve in the HTML report: its points are the Valid cells' own figures."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from inproc import types as st
from inproc.measure.metrics import tok_s_per_gpu
from inproc.record.io import load_results
from inproc.render.curve import curve, gpus
from inproc.render.html import render_html
from inproc.render.measurements import DECODE, measurements
from inproc.render.svg import line_chart

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cpu-vllm-small.json"
POINT = re.compile(r'<circle [^>]*data-series="([^"]*)" data-x="([^"]+)" data-y="([^"]+)"')


@pytest.fixture(scope="module")
def rec():
    return load_results(FIXTURE)


def _points(svg: str) -> set[tuple[str, float, float]]:
    return {(name, float(x), float(y)) for name, x, y in POINT.findall(svg)}


def test_the_points_are_the_valid_cells_figures(rec):
    rows = measurements(rec)
    c = curve([("", rec, rows)])
    decode = [r for r in rows if r.phase == DECODE]
    valid = [r for r in decode if r.status == st.VALID]
    assert valid and len(valid) < len(decode), "the fixture has Valid and other cells"
    n = gpus(rec)
    expected = {(f"{r.context // 1024}K context" if r.context >= 1024 else f"{r.context} context",
                 r.per_request_tok_s, tok_s_per_gpu(r.total_tok_s, n)) for r in valid}
    got = _points(line_chart(c.chart))
    assert {(x, y) for _, x, y in got} == {(x, y) for _, x, y in expected}
    assert len(got) == len(valid)


def test_non_valid_cells_are_left_out_and_counted(rec):
    rows = measurements(rec)
    decode = [r for r in rows if r.phase == DECODE]
    others = [r for r in decode if r.status != st.VALID]
    c = curve([("", rec, rows)])
    assert c.note.startswith(f"{len(others)} cell")
    for status in {r.status for r in others}:
        assert f"{sum(r.status == status for r in others)} {status}" in c.note
    valid_xy = {(r.per_request_tok_s, r.total_tok_s) for r in decode if r.status == st.VALID}
    for r in others:  # a queued cell has figures; they are not points
        if r.per_request_tok_s is not None and (r.per_request_tok_s, r.total_tok_s) not in valid_xy:
            assert r.per_request_tok_s not in {x for _, x, _ in _points(line_chart(c.chart))}


def test_the_html_report_carries_the_curve_and_its_note(rec):
    page = render_html(rec)
    assert "Throughput vs interactivity" in page and 'class="curve-note"' in page
    assert len(_points(page.split('class="charts curve"')[1].split("</svg>")[0])) == \
        sum(r.phase == DECODE and r.status == st.VALID for r in measurements(rec))


def test_two_runs_on_one_chart_keep_their_labels(rec):
    rows = measurements(rec)
    c = curve([("vllm", rec, rows), ("sglang", rec, rows)])
    names = {s.name.split(":")[0] for s in c.chart.series}
    assert names == {"vllm", "sglang"} and len(c.chart.series) % 2 == 0
