"""The report (Markdown, HTML, CSV) from saved results files, and ``inproc report`` on bad input.

Fixtures: ``cpu-vllm-small.json`` is a real CPU run; ``gpu-like.json`` is derived from it
by ``fixtures/make_gpu_like.py`` (fake GPU telemetry, a throttled, a Looped, an Error and
a Pending cell, spec decoding, shared prompts). The golden Markdown was generated once
and reviewed by eye; after an intended change, regenerate it with ``scripts/update_golden.py``
(the test only compares).
"""
from __future__ import annotations

import csv
import inspect
import io
import re
from dataclasses import replace
from pathlib import Path

import pytest

from inproc.measure import metrics
from inproc import types as st
from inproc.render import fmt
from inproc.render.csv import render_csv
from inproc.render.html import render_html
from inproc.render.markdown import render_markdown
from inproc.render.matrix import LEGEND
from inproc.render.measurements import COLUMNS
from inproc.record.io import load_results

pytestmark = pytest.mark.engine_free  # its children run commands that build no engine: one venv runs them

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
CPU = FIXTURES / "cpu-vllm-small.json"
GPU = FIXTURES / "gpu-like.json"
PUBLISHED_COLUMNS = ["Phase", "Context", "Requests at once", "Status", "Total tok/s", "Per request tok/s", "TTFT",
                     "Time between tokens", "Average active requests", "Completed requests", "Output tokens",
                     "Measured for"]


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


# -- number formats ------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    (fmt.tok_s(14_312.0), "14.3K"), (fmt.tok_s(14_000.0), "14K"), (fmt.tok_s(1_035.64), "1,035.6"),
    (fmt.tok_s(8_130.0), "8,130.0"), (fmt.ms(574.4), "574 ms"), (fmt.ms(14_852.0), "14,852 ms"),
    (fmt.ms(7.24, 1), "7.2 ms"), (fmt.secs(29.98), "30.0 s"), (fmt.fixed(1.0234), "1.02"), (fmt.tok_s(None), "—"),
    (fmt.ms(None), "—"), (fmt.pct(0.6), "60.0%"), (fmt.percent(95.75), "95.8%"), (fmt.joules(0.523), "0.523 J"),
    (fmt.joules(1_266.7), "1,267 J"), (fmt.mib(745_725_952.0), "711 MiB"),
])
def test_number_formats_follow_the_published_matrices(text, expected):
    assert text == expected


# -- Markdown --------------------------------------------------------------------
def test_markdown_matches_the_golden_file():
    got = render_markdown(load_results(CPU))
    assert got == (FIXTURES / "cpu-vllm-small.md").read_text(), "run scripts/update_golden.py after an intended change"


def test_markdown_has_the_published_sections_and_notes():
    md = render_markdown(load_results(CPU))
    for title in ("Prefill", "Sustained decode", "All measurements", "Definitions", "Capacity", "Launch settings"):
        assert f"\n## {title}\n" in md
    decode = _section(md, "Sustained decode")
    assert "| Context | 1 | 4 | 10 |" in decode
    assert "| 256 | 45.7 · 568 ms TTFT | 259.9 · 61 ms TTFT | 564.0 · Requests queued · 133 ms TTFT |" in decode
    assert "| 2K | 152.4 · 86 ms TTFT | Over capacity | Over capacity |" in decode
    assert LEGEND[st.QUEUED] in decode and LEGEND[st.OVER_CAPACITY] in decode
    assert LEGEND[st.LOOPED] not in decode  # only the statuses that appear
    assert "TTFT is measured cold" in decode  # distinct prompts
    assert "Weights were dummy (random)" in md
    assert "260 blocks × 32 tokens = 8,320 tokens" in md
    table = _section(md, "All measurements")
    assert "| " + " | ".join(PUBLISHED_COLUMNS) + " |" in table  # the published matrices' columns first, in order
    assert "Latencies are medians. Total tok/s is output across all simultaneous requests." in table
    assert "| Prefill | 256 | 1 | Valid | 452.2 | — | 585 ms |" in table
    assert "Host CPU" in table and "Energy" not in table  # CPU run: host figures, no GPU columns


def test_markdown_of_a_gpu_run_with_every_status():
    md = render_markdown(load_results(GPU))
    decode = _section(md, "Sustained decode")
    assert "| 256 | 45.7 · 568 ms TTFT · throttled | Looped | 564.0 · Requests queued · 133 ms TTFT |" in decode
    assert "| 2K | Error | Over capacity | Pending |" in decode
    for s in (st.QUEUED, st.OVER_CAPACITY, st.LOOPED, st.ERROR, st.PENDING):
        assert LEGEND[s] in decode
    assert "TTFT is measured with the context warm in the prefix cache, so it mostly excludes prefill." in decode
    assert "> **Warning:** Throttled: decode 256 × 1: GPU 1 hw_thermal_slowdown" in decode
    table = _section(md, "All measurements")
    assert "| Energy | J/token | Mean power | Mean SM clock | Max temp |" in table and "Host CPU" not in table
    assert "| Spec acceptance | Spec mean acceptance length |" in table and "| 60.0% | 2.80 |" in table
    looped = next(line for line in table.splitlines() if "| Looped |" in line)
    assert re.fullmatch(r"\| Sustained decode \| 256 \| 4 \| Looped \|( — \|)+ 1 of 8 requests looped: r-6 period 2 ×20 \|",
                        looped), looped  # no figure of a Looped cell is shown
    assert "| Error |" in table and "RuntimeError: fake engine failure" in table
    assert "Weights were dummy" not in md
    assert "- Run note: engine rebuilt after RuntimeError" in md and "- Run note: resumed" in md
    assert "The run did not finish" in md and "2 × NVIDIA H200 (140 GiB each)" in md


def test_definitions_are_the_metric_docstrings():
    defs = _section(render_markdown(load_results(CPU)), "Definitions")
    first = " ".join(inspect.getdoc(metrics.avg_active).split("\n\n")[0].split())
    assert f"- **Average active requests**: {first}" in defs
    assert "- **Harness overhead**: Fraction of the window spent outside `Engine.step()`" in defs


# -- HTML ------------------------------------------------------------------------
EXTERNAL = [r"https?:", r"""(src|href)\s*=\s*["']?//""", r"@import", r"url\((?!\s*['\"]?data:)", r"<script", r"<link"]


@pytest.mark.parametrize("path", [CPU, GPU])
def test_html_is_one_self_contained_page(path):
    page = render_html(load_results(path))
    for pattern in EXTERNAL:
        assert not re.search(pattern, page, re.IGNORECASE), pattern
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert page.count("<svg") >= 3 and page.count("<svg") == page.count("</svg>")
    assert "All measurements" in page and "Definitions" in page


def test_html_text_that_holds_a_url_is_not_a_reference():
    rec = load_results(CPU)
    rec = replace(rec, profile=replace(rec.profile, notes="weights from https://example.com/model and //cdn.example.com"))
    page = render_html(rec)
    assert not re.search(r"https?:", page)
    assert "example.com/model" in page  # the text itself is kept


def test_html_heatmap_and_telemetry_panels():
    gpu = render_html(load_results(GPU))
    assert '<td class="na" title="1 of 8 requests looped: r-6 period 2 ×20">Looped</td>' in gpu
    assert ">Pending</td>" in gpu and ">Over capacity</td>" in gpu and "Requests queued</b>" in gpu
    assert "Power (W)" in gpu and "SM clock (MHz)" in gpu and "GPU 1" in gpu
    cpu = render_html(load_results(CPU))
    assert "CPU use" in cpu and "host CPU % (all CPUs)" in cpu and "Power (W)" not in cpu


@pytest.mark.parametrize("path", [CPU, GPU])
def test_html_puts_the_matrix_and_prefill_first_and_the_setup_after(path):
    from inproc.render.header import build_header

    rec = load_results(path)
    page = render_html(rec)
    at = {title: page.index(f"<h2>{title}</h2>") for title in ("Sustained decode", "Prefill", "All measurements")}
    setup = [page.index(f"<h2>{s.title}</h2>") for s in build_header(rec).sections]
    assert setup and at["Sustained decode"] < page.index('class="heat"') < at["Prefill"]  # the heatmap first
    assert at["Sustained decode"] < at["Prefill"] < min(setup) and max(setup) < at["All measurements"]
    assert page.index("<h1>") < at["Sustained decode"] and page.count("<h1>") == 1


# -- CSV -------------------------------------------------------------------------
@pytest.mark.parametrize("path", [CPU, GPU])
def test_csv_has_one_row_per_entry_with_its_status(path):
    rec = load_results(path)
    rows = list(csv.reader(io.StringIO(render_csv(rec))))
    header, body = rows[0], rows[1:]
    assert header[: len(PUBLISHED_COLUMNS)] == PUBLISHED_COLUMNS and len(header) == len(COLUMNS)
    entries = [("Prefill", e.context, e.status) for e in rec.prefill]
    entries += [("Sustained decode", e.context, e.status) for e in rec.decode]
    assert [(r[0], int(r[1]), r[3]) for r in body] == entries
    total = header.index("Total tok/s")
    for r, e in zip(body[len(rec.prefill):], rec.decode):  # unformatted numbers, blank when not shown
        assert r[total] == (repr(e.figures.total_tok_s) if e.status in st.HEADLINE else "")


# -- the command -----------------------------------------------------------------
def test_report_command_writes_each_format(tmp_path, run_inproc):
    out = run_inproc("report", str(CPU), timeout=120)
    assert out.returncode == 0 and out.stdout == render_markdown(load_results(CPU))
    for fmt_name, render in (("html", render_html), ("csv", render_csv), ("md", render_markdown)):
        target = tmp_path / f"report.{fmt_name}"
        target.write_text("an older report")  # a previous report is replaced
        done = run_inproc("report", str(CPU), "--format", fmt_name, "-o", str(target), timeout=120)
        assert done.returncode == 0, done.stderr
        assert target.read_text() == render(load_results(CPU))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.csv", "report.html", "report.md"]  # no temp left


@pytest.mark.parametrize("case, needle", [
    ("missing", "No results file at"),
    ("format", "Invalid value for '--format': 'pdf' is not one of 'md', 'html', 'csv'"),
    ("foreign_json", "not an inproc results file"),
    ("wrong_content", "not a results file"),
    ("not_json", "not a results file"),
    ("onto_results", "is the results file itself"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(case, needle, tmp_path, run_inproc):
    results, out, fmt_name = tmp_path / "r.json", tmp_path / "report.md", "md"
    contents = {"foreign_json": '{"hello": 1}', "wrong_content": '{"schema_version": 1, "decode": 3}',
                "not_json": "not json at all", "format": CPU.read_text(), "onto_results": CPU.read_text()}
    if case in contents:
        results.write_text(contents[case])
    if case == "format":
        fmt_name = "pdf"
    if case == "onto_results":
        out = results
    before = sorted(p.name for p in tmp_path.iterdir())
    done = run_inproc("report", str(results), "--format", fmt_name, "-o", str(out), timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("Error: ") and needle in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr and done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before
