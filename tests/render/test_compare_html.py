"""inproc compare --html: one page, the verdict table and both runs' curves, whose points are their Valid cells' figures."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from inproc import types as st
from inproc.cli.main import main
from inproc.measure.metrics import tok_s_per_gpu
from inproc.record.io import load_results
from inproc.render.curve import gpus
from inproc.render.measurements import DECODE, measurements
from inproc.units import format_tokens
from tests.conftest import FIXTURES

HERE = FIXTURES / "compare"
RUN1, RUN2, VLLM, SGLANG = (str(HERE / f"{n}.json") for n in ("run-1", "run-2", "engines-vllm", "engines-sglang"))
POINT = re.compile(r'<circle [^>]*data-series="([^"]*)" data-x="([^"]+)" data-y="([^"]+)"')


def compare(*args: str, capsys) -> tuple[int, str, str]:
    """``inproc compare ARGS`` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as done:
        main(["compare", *args])
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


def expected_points(path: str, label: str) -> set[tuple[str, float, float]]:
    """(series, x, y) of every Valid decode cell of the file: tok/s per request, total tok/s per GPU."""
    rec = load_results(path)
    n = gpus(rec)
    return {(f"{label}: {format_tokens(r.context)} context", r.per_request_tok_s, tok_s_per_gpu(r.total_tok_s, n))
            for r in measurements(rec) if r.phase == DECODE and r.status == st.VALID and r.per_request_tok_s is not None}


def points(page: str) -> set[tuple[str, float, float]]:
    chart = page.split('class="charts curve"')[1].split("</svg>")[0]
    return {(name.replace("&#x27;", "'"), float(x), float(y)) for name, x, y in POINT.findall(chart)}


def test_the_page_holds_the_verdict_table_and_both_runs_points(tmp_path, capsys):
    page_path = tmp_path / "compare.html"
    code, out, err = compare(RUN1, RUN2, "--run-spread", "5%", "--html", str(page_path), capsys=capsys)
    assert code == 3 and "could not be judged (256 x 1 ttft, 1K x 1 ttft: too few samples)" in out and out.rstrip().endswith(".") and f"compare: {page_path}" in err
    page = page_path.read_text()
    assert "inproc compare: not every row judged" in page  # exit 3: no regression found, not every row judged
    base = expected_points(RUN1, "baseline run-1 (vllm 0.32.0)")
    new = expected_points(RUN2, "new run-2 (vllm 0.32.0)")
    assert base and new
    assert points(page) == base | new  # every Valid cell of each run is a point, at its own figures, and nothing else
    assert out.splitlines()[-1] in page.replace("&#x27;", "'")  # the verdict line
    rows = re.findall(r"^. (\d+K? x \d+) +(tok_s|tbt|ttft) ", out, re.M)
    assert len(rows) == 12 and page.count("<tr") == 1 + len(rows)  # a row per cell and metric, under one header


def test_two_engines_side_by_side_get_one_chart_labelled_by_engine(tmp_path, capsys):
    page_path = tmp_path / "engines.html"
    code, out, _ = compare(VLLM, SGLANG, "--html", str(page_path), capsys=capsys)
    assert code == 0 and "Two engines side by side" in out
    page = page_path.read_text()
    v, s = load_results(VLLM), load_results(SGLANG)
    want = (expected_points(VLLM, f"engines-vllm (vllm {v.engine.version})")
            | expected_points(SGLANG, f"engines-sglang (sglang {s.engine.version})"))
    assert {n.split(":")[0] for n, _, _ in want} == {f"engines-vllm (vllm {v.engine.version})",
                                                     f"engines-sglang (sglang {s.engine.version})"}
    assert points(page) == want
    assert "Two engines side by side" in page


@pytest.mark.parametrize("bad, needle", [("{tmp}/no/such/folder/c.html", "no folder"),
                                         ("{run1}", "is one of the files compared")])
def test_a_bad_html_path_is_one_line_and_exit_2(tmp_path, capsys, bad, needle):
    path = bad.format(tmp=tmp_path, run1=RUN1)
    before = Path(RUN1).read_bytes()
    code, out, err = compare(RUN1, RUN2, "--html", path, capsys=capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --html") and needle in lines[0]
    assert Path(RUN1).read_bytes() == before and not (tmp_path / "no").exists()
