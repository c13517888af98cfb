"""``inproc.open`` for notebooks, outside tools reading the cell files, and the query of
``docs/results-format.md`` run as written, on a real run (``tests/fixtures/schemas``)."""
from __future__ import annotations

import dataclasses
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
from inproc.record.schema import EarlierTry
from inproc.telemetry.disturbed import Disturbance
from tests.conftest import DEFAULT_PROFILE, FIXTURES, needs

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


#: A cause and two earlier tries set on a real run's entries, as ``--retry-disturbed 2`` would leave them.
DISTURBANCE = Disturbance(other_cores=0.94, causes=("other processes used 0.94 cores of 2 (47 %) during the window",))
CAUSE = DISTURBANCE.reason
TRIES = (EarlierTry(1, 101.5, CAUSE), EarlierTry(2, 88.25, "disturbed: another cause"))


def _flagged(tmp_path: Path) -> Path:
    """The schema-10 fixture's run written again with its first decode cell on its third try (two disturbed before,
    the last one disturbed too) and its prefill entry disturbed; the second decode cell measured once, quiet."""
    rec = load_results(RUN)
    first = rec.decode[0]
    tel = dataclasses.replace(first.telemetry, disturbance=DISTURBANCE)
    decode = (dataclasses.replace(first, telemetry=tel, tries=TRIES),) + rec.decode[1:]
    prefill = tuple(dataclasses.replace(e, telemetry=dataclasses.replace(e.telemetry, disturbance=tel.disturbance))
                    for e in rec.prefill)
    out = tmp_path / "r.json"
    write_results(out, dataclasses.replace(rec, decode=decode, prefill=prefill))
    return out


def test_the_manifest_rows_carry_the_flag_and_open_gives_it_on_cells_and_in_figures(tmp_path):
    """Wrong code this fails: a manifest row reduced to the headline alone (the flag only in the cell files, as
    before), ``inproc.open`` reading the flag from nowhere or from the wrong row, ``tries`` not carried."""
    out = _flagged(tmp_path)
    manifest = json.loads(out.read_text())
    (prefill,), (first, second) = manifest["prefill"], manifest["decode"]
    assert prefill["disturbed"] == CAUSE and "try" not in prefill  # a prefill entry is measured once
    assert (first["disturbed"], first["try"], first["tries"]) == (CAUSE, 3, [t.to_dict() for t in TRIES])
    assert (second["disturbed"], second["try"], second["tries"]) == ("", 1, [])
    run = inproc.open(out)
    cells = {c.name: c for c in run.cells}
    got = [(c.disturbed, c.try_number, c.tries) for c in (cells["prefill-256"], cells["decode-256x1"],
                                                           cells["decode-256x4"])]
    assert got == [(CAUSE, 1, ()), (CAUSE, 3, TRIES), ("", 1, ())]
    figures = run.figures.to_pydict()
    assert figures["disturbed"] == [CAUSE, CAUSE, ""] and figures["try"] == [1, 3, 1]
    assert figures["tries"] == [[], [t.to_dict() for t in TRIES], []]
    again = load_results(out).decode[0]  # and the loader, reading both rows, agrees
    assert (again.disturbed, again.try_number, again.tries) == (CAUSE, 3, TRIES)


@pytest.mark.parametrize("name", ["v10.json", "v8.json", "v6.json"])
def test_an_older_file_without_the_flag_reads_as_quiet_on_the_first_try(name):
    """The fixtures were written before the manifest carried the flag (v10's cell files lack it too)."""
    path = FIXTURES / "schemas" / name
    assert not any(k in row for kind in ("prefill", "decode") for row in json.loads(path.read_text())[kind]
                   for k in ("disturbed", "try", "tries"))
    run = inproc.open(path)
    assert [(c.disturbed, c.try_number, c.tries) for c in run.cells] == [("", 1, ())] * 3
    figures = run.figures.to_pydict()
    assert (figures["disturbed"], figures["try"], figures["tries"]) == ([""] * 3, [1] * 3, [[]] * 3)


@needs("vllm")
def test_a_run_written_by_inproc_run_carries_the_flag_in_its_manifest(shipped_run):
    """The vLLM default profile's matrix, run for real (once per session, shared with the profiles' tests)."""
    out = shipped_run(DEFAULT_PROFILE)
    rows = json.loads(out.read_text())["decode"]
    rec = load_results(out)
    assert rows and [(r["disturbed"], r["try"], r["tries"]) for r in rows] == \
        [(e.disturbed, e.try_number, [t.to_dict() for t in e.tries]) for e in rec.decode]
    assert [(c.disturbed, c.try_number) for c in inproc.open(out).cells] == [(e.disturbed, 1) for e in rec.decode]
