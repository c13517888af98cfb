"""``inproc.open`` for notebooks, outside tools reading the cell files, and the query of
``docs/results-format.md`` run as written, on a real run (``tests/fixtures/schemas``)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import inproc
from inproc.record.io import cells_dir, load_results, write_results
from tests.conftest import FIXTURES

RUN = FIXTURES / "schemas" / "v10.json"
DOC = Path(__file__).resolve().parents[2] / "docs" / "results-format.md"


def test_open_gives_the_header_cells_tables_and_figures_of_the_loaded_run():
    run, rec = inproc.open(RUN), load_results(RUN)
    assert run.header["created"] == rec.created and run.header["schema_version"] == 10
    assert [c.name for c in run.cells] == ["prefill-256"] + [f"decode-{e.key}" for e in rec.decode]
    for c, e in zip(run.cells[1:], rec.decode):
        assert c.steps.num_rows == len(e.trace.steps)
        assert c.steps.column("t_end_ns").to_pylist() == [round(t * 1e9) for t in e.trace.steps.t_end_s]
        assert c.tokens.column("id").to_pylist() == [int(i) for r in e.trace.requests for i in r.token_ids]
        assert c.requests.column("request_id").to_pylist() == [r.request_id for r in e.trace.requests]
    prefill = run.cell("prefill-256")
    assert sorted(set(prefill.steps.column("sample").to_pylist())) == list(range(len(rec.prefill[0].samples)))
    figures = run.figures.to_pylist()
    assert [(f["kind"], f["context"], f["status"]) for f in figures] == \
        [("prefill", e.context, e.status) for e in rec.prefill] + [("decode", e.context, e.status) for e in rec.decode]
    assert [f["total_tok_s"] for f in figures[1:]] == [e.figures.total_tok_s for e in rec.decode]
    together = run.steps
    assert together.num_rows == sum(c.steps.num_rows for c in run.cells)
    assert together.column_names[:3] == ["cell", "context", "concurrency"]
    with pytest.raises(KeyError, match="decode-256x1"):
        run.cell("decode-9x9")


@pytest.mark.parametrize("version", [6, 8])
def test_an_older_file_opens_as_the_same_tables(version):
    """6 held its raw records inline, 8 in .npz cell files: the tables are built from them as 10 stores them."""
    new, old = inproc.open(RUN), inproc.open(FIXTURES / "schemas" / f"v{version}.json")
    for a, b in zip(new.cells, old.cells):
        assert a.name == b.name
        assert a.tokens.equals(b.tokens), a.name
        assert a.requests.column("request_id").equals(b.requests.column("request_id"))
        assert a.steps.column("num_running").equals(b.steps.column("num_running"))
        if version == 8:  # its times are on the nanosecond grid, as 10's (6's are not: they stay seconds)
            assert a.steps.equals(b.steps) and a.requests.equals(b.requests), a.name


def test_import_inproc_imports_no_engine_and_no_pyarrow():
    code = "import sys, inproc; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {}) ))"
    heavy = {"vllm", "sglang", "torch", "pyarrow", "scipy"}
    out = subprocess.run([sys.executable, "-c", "import json; " + code.format(sorted(heavy))], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    assert json.loads(out.stdout) == []


OUTSIDE = r"""
import glob, json, sys
import pyarrow.parquet as pq
steps = {p.rsplit("/", 1)[1].split(".")[0]: pq.read_table(p).column("t_end_ns").to_pylist()
         for p in glob.glob(sys.argv[1] + "/*.steps.parquet")}
print(json.dumps({"steps": steps, "inproc": any(m.split(".")[0] == "inproc" for m in sys.modules)}))
"""


def test_pyarrow_alone_reads_the_same_steps_as_inproc_open(tmp_path):
    """A child process that cannot import inproc (``-I``: neither this checkout nor PYTHONPATH on its path)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    child = subprocess.run([sys.executable, "-I", "-c", OUTSIDE, str(cells_dir(RUN))], capture_output=True, text=True,
                           check=True, env=env, cwd=tmp_path)
    seen = json.loads(child.stdout)
    assert not seen["inproc"]
    assert seen["steps"] == {c.name: c.steps.column("t_end_ns").to_pylist() for c in inproc.open(RUN).cells}
    assert len(seen["steps"]) == 3


def _doc_block(title: str) -> str:
    """The fenced Python block under the heading ``title`` of the results-format doc."""
    text = DOC.read_text()
    part = text[text.index(title):]
    return re.search(r"```python\n(.*?)```", part, re.S).group(1)


def test_the_docs_pyarrow_query_runs_on_a_real_run_and_matches_numpy(tmp_path, capsys):
    out = tmp_path / "RESULTS.json"
    write_results(out, load_results(RUN))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(_doc_block("### pyarrow"), "results-format.md", "exec"), {})
    finally:
        os.chdir(cwd)
    printed = [line.split() for line in capsys.readouterr().out.strip().splitlines()]
    run = inproc.open(out)
    expected = {}
    for c in run.cells:
        if c.kind != "decode":
            continue
        s = c.steps.to_pydict()
        for n, p, mode, t0, t1 in zip(s["num_decode_reqs"], s["num_prefill_reqs"], s["graph_mode"], s["t_start_ns"],
                                      s["t_end_ns"]):
            if p == 0:
                expected.setdefault((n, mode), []).append(t1 - t0)
    assert printed and {(int(n), mode): float(ms) for n, mode, ms in printed} == \
        {k: pytest.approx(np.median(v) / 1e6, abs=1e-6) for k, v in expected.items()}
