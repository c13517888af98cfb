"""``inproc run --shard I/N`` on the real engine, then ``inproc merge``: the same cells as one run, each once."""
from __future__ import annotations

import json

import pytest

from inproc.record.io import load_results
from tests.cli.test_cli import inproc
from tests.conftest import DEFAULT_PROFILE, needs_vllm
from tests.spawn import run_main

pytestmark = pytest.mark.engine  # every test here starts `python -m inproc`

# One row with a prefill and two cells, one row of two cells without: 5 entries.
FLAGS = ["--contexts", "256,512", "--concurrency", "1,2", "--prefill-contexts", "256", "--prefill-samples", "1",
         "--duration", "0.3", "--max-output", "16", "--seed", "5"]


@pytest.mark.parametrize("args,needle", [
    (["--shard", "3/2", "--seed", "1"], "Bad --shard '3/2'"),
    (["--shard", "1of2", "--seed", "1"], "Bad --shard '1of2'"),
    (["--shard", "1/2"], "--shard 1/2 needs --seed N"),
    (["--contexts", "256", "--concurrency", "1", "--no-prefill", "--shard", "1/2", "--seed", "1"], "at most 1 shards"),
])
def test_bad_shard_flags_are_one_line_exit_2(args, needle, tmp_path, capfd):
    out = tmp_path / "r.json"
    p = run_main(capfd, "run", str(DEFAULT_PROFILE), *args, "--out", str(out))
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and needle in lines[0], p.stderr
    assert not out.exists()


@pytest.mark.long
@needs_vllm
def test_two_shards_merged_hold_the_cells_of_one_run_each_once(tmp_path):
    whole = tmp_path / "whole.json"
    p = inproc("run", str(DEFAULT_PROFILE), *FLAGS, "--out", str(whole))
    assert p.returncode == 0, p.stderr[-3000:]
    shards = []
    for i in (1, 2):
        path = tmp_path / f"shard{i}.json"
        p = inproc("run", str(DEFAULT_PROFILE), *FLAGS, "--shard", f"{i}/2", "--out", str(path))
        assert p.returncode == 0, p.stderr[-3000:]
        shards.append(path)
    parts = [json.loads(s.read_text()) for s in shards]
    assert [d["shard"]["index"] for d in parts] == [1, 2] and parts[0]["shard"]["plan_id"] == parts[1]["shard"]["plan_id"]
    assert all(d["decode"] or d["prefill"] for d in parts)  # both runners measured something
    merged = tmp_path / "merged.json"
    p = inproc("merge", *map(str, shards), "-o", str(merged))
    assert p.returncode == 0, p.stderr[-3000:]
    one, both = load_results(whole), load_results(merged)
    assert [e.key for e in both.decode] == [e.key for e in one.decode] == ["256x1", "256x2", "512x1", "512x2"]
    assert [e.context for e in both.prefill] == [e.context for e in one.prefill] == [256]
    assert all(e.figures is not None and e.figures.output_tokens > 0 for e in both.decode)
    # Each cell's figures are the shard's own: merged, not measured again.
    by_shard = {(c["context"], c["concurrency"]): c["total_tok_s"] for d in parts for c in d["decode"]}
    assert {(e.context, e.concurrency): e.figures.total_tok_s for e in both.decode} == pytest.approx(by_shard)
    # The report reads the merged file like any other.
    report = inproc("report", str(merged))
    assert report.returncode == 0 and "Merged from" in report.stdout and "Pending" not in report.stdout
