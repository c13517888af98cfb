"""The sweep summary and its reports, derived from results files on load (saved CPU runs as fixtures)."""
from __future__ import annotations

import dataclasses
import re

import pytest

from inproc import types as st
from inproc.record.io import load_results, write_results
from inproc.render.sweep.data import render_sweep_csv
from inproc.render.sweep.formats import render_sweep_markdown
from inproc.render.sweep.page import render_sweep_html
from inproc.sweep.manifest import DONE, FAILED, PENDING, Sweep, SweepPlan, VariantRun, load_sweep, write_sweep
from inproc.sweep.plan import parse_varies, plan_variants
from inproc.sweep.summary import CellSummary, VariantCell, summarize
from tests.conftest import FIXTURES

FIXTURE = FIXTURES / "cpu-vllm-small.json"  # a real CPU run: Valid, Requests queued and Over capacity cells


def _row(i, status, tok_s):
    return VariantCell(i, f"v={i}", str(i), status, total_tok_s=tok_s)


def test_best_and_spread_read_only_valid_variants():
    from inproc.sweep.summary import _mark_best

    rows = _mark_best([_row(1, st.VALID, 100.0), _row(2, st.QUEUED, 900.0), _row(3, st.VALID, 150.0),
                       _row(4, st.ERROR, None)])
    cell = CellSummary(256, 8, rows)
    assert cell.best.index == 3 and [r.best for r in rows] == [False, False, True, False]
    assert cell.spread == pytest.approx(1.5)  # 150 / 100: the queued variant held fewer than C in flight
    lone = CellSummary(256, 8, _mark_best([_row(1, st.QUEUED, 5.0), _row(2, st.VALID, 4.0)]))
    assert lone.best.index == 2 and lone.spread is None
    assert CellSummary(256, 8, _mark_best([_row(1, st.QUEUED, 5.0)])).best is None


def _sweep_dir(tmp_path):
    """Three variants: two measured (the fixture, once with 3 GiB of graph memory recorded), one failed, one pending."""
    variants = plan_variants(parse_varies(("max-num-seqs=4,8,16,32",)))
    rec = load_results(FIXTURE)
    write_results(tmp_path / variants[0].file, rec)
    settings = dataclasses.replace(rec.engine.settings, graph_capture_memory_bytes=3 * 2**30)
    second = dataclasses.replace(rec, engine=dataclasses.replace(rec.engine, settings=settings, build_s=12.5),
                                 decode=rec.decode[:2])  # it did not plan the other cells
    write_results(tmp_path / variants[1].file, second)
    runs = (VariantRun(variants[0], DONE), VariantRun(variants[1], DONE),
            VariantRun(variants[2], FAILED, "vLLM rejected the arguments: max_num_seqs: bad"), VariantRun(variants[3]))
    plan = SweepPlan("/p.toml", "p", "vllm", parse_varies(("max-num-seqs=4,8,16,32",)), False, ("--cells", "256x1"), 7)
    write_sweep(tmp_path, Sweep(plan, runs, "inproc sweep ...", "now"))
    return load_sweep(tmp_path)


def test_summary_per_cell_and_per_variant(tmp_path):
    s = summarize(_sweep_dir(tmp_path), tmp_path)
    rec = load_results(FIXTURE)
    by_cell = {(c.context, c.concurrency): c for c in s.cells}
    assert sorted(by_cell) == sorted((e.context, e.concurrency) for e in rec.decode)
    c = by_cell[(256, 4)]
    assert [r.status for r in c.rows] == [st.VALID, st.VALID, "variant failed", f"variant {PENDING}"]
    want = next(e for e in rec.decode if e.key == "256x4").figures
    assert c.rows[0].total_tok_s == pytest.approx(want.total_tok_s) and c.rows[0].tbt_ms == pytest.approx(want.tbt_ms)
    assert c.rows[0].graph_step_share == dict(want.anatomy.graph_step_share)
    assert c.spread == pytest.approx(1.0) and c.rows[2].reason.startswith("vLLM rejected")
    assert by_cell[(2048, 1)].rows[1].status == "not measured"
    v = {x.index: x for x in s.variants}
    assert v[2].graph_memory_bytes == 3 * 2**30 and v[2].build_s == 12.5 and v[1].graph_memory_bytes is None
    assert [x.index for x in s.failed] == [3]


def test_sweep_reports(tmp_path):
    s = summarize(_sweep_dir(tmp_path), tmp_path)
    md = render_sweep_markdown(s)
    assert "4 variants of max-num-seqs (every combination)" in md and "2 measured, 1 failed" in md
    assert "| 2 | max-num-seqs=8 | done | 12.5 s |" in md and "3.00 GiB" in md
    assert "- #3 max-num-seqs=16: failed: vLLM rejected the arguments" in md
    assert "## Decode 256 × 10" in md and "max-num-seqs=4 | Requests queued" in md
    assert "Best: none (no variant was Valid in this cell)." in md  # 256 x 10 queued in both
    assert "## Definitions" in md and "## Definitions" not in render_sweep_markdown(s, with_definitions=False)
    csv = render_sweep_csv(s).splitlines()
    assert len(csv) == 1 + len(s.cells) * 4 and csv[0].startswith("Context,Requests at once,Variant,Status,Best")
    html = render_sweep_html(s)
    assert html.count("<svg") == len(s.cells) and "Decode 256 × 4: total tok/s by variant" in html
    chart = next(svg for svg in html.split("<svg")[1:] if "Decode 256 × 4: total tok/s by variant" in svg)
    assert all(f">{label}</text>" in chart for label in ("4", "8", "16", "32"))  # the variants on the x axis
    assert not re.search(r"(https?:|src=|href=)", html)
