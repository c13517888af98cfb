"""inproc compare, baseline and report on results files whose cells carry kernel passes (simulated tables)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from inproc.record.io import load_results, write_results
from tests.cli.test_cli import inproc
from tests.compare.test_kernels import RUNS, with_kernels
from tests.sim.kernels import PassSettings

pytestmark = [pytest.mark.engine, pytest.mark.engine_free]  # starts `python -m inproc`, which builds no engine


def test_a_baseline_against_a_planted_run_names_gemm_in_every_format(tmp_path):
    rng = np.random.default_rng(21)
    clean = [tmp_path / f"clean-{i}.json" for i in range(3)]
    for path, rec in zip(clean, RUNS):
        write_results(path, with_kernels(rec, PassSettings(), rng))
    planted, quiet = tmp_path / "planted.json", tmp_path / "quiet.json"
    write_results(planted, with_kernels(RUNS[0], PassSettings(plant="gemm", plant_ms=3.0), rng))
    write_results(quiet, with_kernels(RUNS[1], PassSettings(), rng))
    assert load_results(planted).decode[0].trace.kernels is not None  # the table went through the file
    base = tmp_path / "baseline.json"
    assert inproc("baseline", *map(str, clean), "-o", str(base)).returncode == 0
    p = inproc("compare", str(base), str(planted), "--format", "json")
    doc = json.loads(p.stdout)
    assert [k["named"] for k in doc["kernels"]] == [["gemm"]] * 4, p.stdout
    assert all(k["test"] == "between-run t" and (k["n_base"], k["n_new"]) == (3, 1) for k in doc["kernels"])
    text = inproc("compare", str(base), str(planted)).stdout
    assert text.count("the change sits in gemm: +") == 4
    calm = json.loads(inproc("compare", str(base), str(quiet), "--format", "json").stdout)
    assert len(calm["kernels"]) == 4 and all(k["named"] == [] for k in calm["kernels"])
    md = tmp_path / "report.md"
    assert inproc("report", str(planted), "-o", str(md)).returncode == 0
    assert "## Kernels" in md.read_text() and "| 256 × 1 |" in md.read_text()
