"""A results file of every schema loads (``tests/fixtures/schemas``: the same real vLLM run in each
layout), derives the same verdicts, and a run resumed from a schema-8 file keeps its ``.npz``
cell files and writes its new entries as Parquet."""
from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest

from inproc.record.io import SCHEMA_VERSION, ResultsWriter, cells_dir, load_results
from tests.conftest import FIXTURES

SCHEMAS = FIXTURES / "schemas"
FILES = {1: FIXTURES / "cpu-vllm-small.json", 2: FIXTURES / "compare" / "run-1.json",
         **{v: SCHEMAS / f"v{v}.json" for v in range(3, SCHEMA_VERSION + 1)}}


def test_there_is_a_file_of_every_schema():
    assert sorted(FILES) == list(range(1, SCHEMA_VERSION + 1))
    assert all(json.loads(p.read_text())["schema_version"] == v for v, p in FILES.items())


@pytest.mark.parametrize("version", sorted(FILES))
def test_every_schema_loads_with_its_raw_records(version):
    rec = load_results(FILES[version])
    assert rec.schema_version == version and rec.decode
    measured = [e for e in rec.decode if e.trace is not None]
    assert measured and all(len(e.trace.steps) > 0 and e.figures is not None for e in measured)
    assert all(len(r.token_ids) == sum(r.token_counts) for e in measured for r in e.trace.requests)


@pytest.mark.parametrize("version", [3, 4, 5, 7, 8, 9])
def test_the_same_run_in_each_layout_reads_the_same(version):
    """3 to 9 hold the run of ``v6.json``; 7 to 9 derive its figures again from their cell files."""
    six, other = load_results(FILES[6]), load_results(FILES[version], rederive=True)
    assert [(e.key, e.status) for e in other.decode] == [(e.key, e.status) for e in six.decode]
    for a, b in zip(six.decode, other.decode):
        assert len(a.trace.steps) == len(b.trace.steps)
        assert np.allclose(a.trace.steps.t_end_s, b.trace.steps.t_end_s, rtol=0, atol=1e-9)  # 8 on: on the ns grid
        assert [list(r.token_ids) for r in a.trace.requests] == [list(r.token_ids) for r in b.trace.requests]
        assert b.figures.total_tok_s == pytest.approx(a.figures.total_tok_s, rel=1e-6)


def test_a_run_resumed_from_a_schema_8_file_keeps_its_npz_and_writes_parquet(tmp_path):
    path = tmp_path / "v8.json"
    shutil.copy(FILES[8], path)
    shutil.copytree(SCHEMAS / "v8.cells", cells_dir(path))
    (cells_dir(path) / f"decode-{load_results(path).decode[1].key}.npz").unlink()  # measured after the interruption
    full = load_results(FILES[8])
    partial = dataclasses.replace(full, decode=full.decode[:1], finished=False)
    ResultsWriter(path, partial).save(full)  # resumed: the second decode cell is new to the writer
    names = sorted(p.name for p in cells_dir(path).iterdir())
    assert "decode-256x1.npz" in names and "prefill-256.npz" in names
    assert f"decode-{full.decode[1].key}.json.gz" in names and f"decode-{full.decode[1].key}.steps.parquet" in names
    again = load_results(path, rederive=True)  # the npz cells' cached rows were made by other definitions
    assert again.schema_version == SCHEMA_VERSION
    assert [(e.key, e.figures) for e in again.decode] == [(e.key, e.figures) for e in full.decode]
