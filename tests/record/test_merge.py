"""``inproc merge`` on saved results: shards cut from a real run, put together again, and every refusal.

The shards are made from ``tests/fixtures/cpu-vllm-small.json`` (a real vLLM run) by the
same split ``inproc run --shard I/N`` uses, so no engine is needed here;
``tests/cli/test_shard.py`` runs real shards.
"""
from __future__ import annotations

import dataclasses
import json

import pytest

from inproc.plan.matrix import make_plan
from inproc.plan.shard import Shard, plan_id, shard_plan
from inproc.record.io import load_results, write_results
from inproc.record.merge import merge_shards
from inproc.record.schema import ShardRef
from inproc.render.markdown import render_markdown
from tests.conftest import FIXTURES
from tests.spawn import run_inproc

pytestmark = pytest.mark.engine_free  # its children run commands that build no engine: one venv runs them

SMALL = FIXTURES / "cpu-vllm-small.json"


def shard_records(rec, count, plan=None):
    """The ``count`` shard records of ``rec``'s plan (``plan``: another RunPlan to claim)."""
    plan = plan or rec.plan
    full = make_plan(plan.settings, rec.capacity, plan.seed)
    out = []
    for i in range(1, count + 1):
        part = shard_plan(full, Shard(i, count))
        ref = ShardRef(i, count, plan_id(full), part.prefill_contexts, tuple((c.context, c.concurrency) for c in part.cells))
        out.append(dataclasses.replace(rec, plan=plan, shard=ref, measure_s=1.0 + i,
                                       prefill=tuple(e for e in rec.prefill if e.context in ref.prefill),
                                       decode=tuple(e for e in rec.decode if (e.context, e.concurrency) in ref.cells)))
    return out


def write(tmp_path, records, stem="s"):
    paths = []
    for r in records:
        path = tmp_path / f"{stem}{r.shard.index}of{r.shard.count}.json"
        write_results(path, r)
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("count", [1, 2, 3, 8])
def test_shards_merge_back_to_the_run_each_entry_once(tmp_path, count):
    rec = load_results(SMALL)
    paths = write(tmp_path, shard_records(rec, count))
    merged = merge_shards([(p, load_results(p)) for p in paths], command="inproc merge …")
    assert [e.context for e in merged.prefill] == [e.context for e in rec.prefill]
    assert [e.key for e in merged.decode] == [e.key for e in rec.decode]  # each once, in plan order
    assert [e.status for e in merged.decode] == [e.status for e in rec.decode]
    assert [e.figures.output_tokens if e.figures else None for e in merged.decode] == \
        [e.figures.output_tokens if e.figures else None for e in rec.decode]
    assert merged.finished and merged.shard is None and merged.measure_s == pytest.approx(sum(1.0 + i for i in range(1, count + 1)))
    assert [(m.index, m.path) for m in merged.merged_from] == [(i + 1, p) for i, p in enumerate(paths)]
    # A merged file is an ordinary results file: written, loaded, reported.
    write_results(tmp_path / "merged.json", merged)
    again = load_results(tmp_path / "merged.json")
    assert [e.key for e in again.decode] == [e.key for e in rec.decode] and len(again.merged_from) == count
    report = render_markdown(again)
    assert "Merged from" in report and "Pending" not in report


def test_a_shard_file_reports_the_other_shards_cells_as_elsewhere(tmp_path):
    rec = load_results(SMALL)
    (path,) = write(tmp_path, shard_records(rec, 2)[:1])
    report = render_markdown(load_results(path))
    assert "Shard: 1/2 of plan" in report and "Pending" not in report


def merge_cli(*args):
    return run_inproc("merge", *args, timeout=120)


def _bad_sets(tmp_path):
    rec = load_results(SMALL)
    two = shard_records(rec, 2)
    other_seed = shard_records(rec, 2, dataclasses.replace(rec.plan, seed=99))
    other_window = shard_records(rec, 2, dataclasses.replace(rec.plan, settings=dataclasses.replace(rec.plan.settings, window_s=2.0)))
    gpu = dataclasses.replace(rec.machine, gpu={"devices": [{"name": "NVIDIA H200"}]})
    stolen = dataclasses.replace(two[1], decode=two[1].decode + (two[0].decode[0],))
    return {
        "different plans (seed)": (write(tmp_path, [two[0]], "a") + write(tmp_path, [other_seed[1]], "b"), "seeds differ"),
        "different plans (settings)": (write(tmp_path, [two[0]], "c") + write(tmp_path, [other_window[1]], "d"), "window_s"),
        "three-shard plan": (write(tmp_path, [two[0]], "e") + write(tmp_path, [shard_records(rec, 3)[1]], "f"), "shard 2/3"),
        "missing shard": (write(tmp_path, [two[0]], "g"), "Shard 2/2 is missing"),
        "overlapping shard": (write(tmp_path, [two[0]], "h") + write(tmp_path, [two[0]], "i"), "both shard 1/2"),
        "overlapping entry": (write(tmp_path, [two[0]], "j") + write(tmp_path, [stolen], "k"), "Overlapping shards"),
        "different engines": (write(tmp_path, [two[0]], "l") + write(tmp_path, [dataclasses.replace(
            two[1], engine=dataclasses.replace(rec.engine, version="0.33.0"))], "m"), "different engines"),
        "different GPU models": (write(tmp_path, [two[0]], "n") + write(tmp_path, [dataclasses.replace(two[1], machine=gpu)], "o"),
                                 "different GPU models"),
        "not a shard": ([str(SMALL)], "is not a shard"),
        "unfinished": (write(tmp_path, [two[0]], "p") + write(tmp_path, [dataclasses.replace(two[1], finished=False)], "q"),
                       "did not finish"),
        "no such file": ([str(tmp_path / "nope.json")], "No results file"),
    }


@pytest.mark.parametrize("case", ["different plans (seed)", "different plans (settings)", "three-shard plan", "missing shard",
                                  "overlapping shard", "overlapping entry", "different engines", "different GPU models",
                                  "not a shard", "unfinished", "no such file"])
@pytest.mark.engine  # starts `inproc merge`
def test_bad_shards_are_one_line_exit_2_and_no_file(tmp_path, case):
    paths, needle = _bad_sets(tmp_path)[case]
    out = tmp_path / "merged.json"
    p = merge_cli(*paths, "-o", str(out))
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("Error: "), p.stderr
    assert needle in lines[0] and "Traceback" not in p.stderr
    assert not out.exists() and not out.with_suffix(".md").exists()


@pytest.mark.engine  # starts `inproc merge`
def test_merge_cli_writes_the_merged_file_and_refuses_to_overwrite(tmp_path):
    rec = load_results(SMALL)
    paths = write(tmp_path, shard_records(rec, 2))
    out = tmp_path / "merged.json"
    p = merge_cli(*paths, "-o", str(out))
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert [c["context"] * 1000 + c["concurrency"] for c in data["decode"]] == \
        [e.context * 1000 + e.concurrency for e in rec.decode]
    assert data["shard"] is None and [m["index"] for m in data["merged_from"]] == [1, 2]
    assert out.with_suffix(".md").exists() and "merged 2 shards" in p.stdout
    again = merge_cli(*paths, "-o", str(out))
    assert again.returncode == 2 and "--force" in again.stderr
    into_shard = merge_cli(*paths, "-o", paths[0], "--force")
    assert into_shard.returncode == 2 and "is one of the shards" in into_shard.stderr


def test_compare_reads_a_merged_file_like_the_run_it_was_cut_from(tmp_path, run_inproc):
    rec = load_results(SMALL)
    merged = merge_shards([(p, load_results(p)) for p in write(tmp_path, shard_records(rec, 3))], command="inproc merge …")
    write_results(tmp_path / "merged.json", merged)

    def compare(new):
        p = run_inproc("compare", str(SMALL), new, "--format", "json", timeout=120)
        # No regression: 0, or 3 where rows could not be judged (one run each side, C = 1's few samples).
        assert p.returncode in (0, 3), p.stderr
        doc = json.loads(p.stdout)
        assert doc["exit_code"] == p.returncode
        return doc

    itself, against_merged = compare(str(SMALL)), compare(str(tmp_path / "merged.json"))
    assert against_merged["exit_code"] == itself["exit_code"]
    # The same cells and figures: every row of the merged comparison is the row of the run against itself.
    assert against_merged["rows"] and against_merged["rows"] == itself["rows"]
