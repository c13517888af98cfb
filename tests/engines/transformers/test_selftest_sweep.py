"""``inproc selftest --engine transformers`` passes on the installed build, and ``inproc sweep`` over its block
size builds one engine per size, each with the pool the engine made of it (long: a build per variant)."""
from __future__ import annotations

import json
import sys

import pytest

from inproc.record.io import load_results
from inproc.selftest.report import load
from tests.conftest import DEFAULT_PROFILES, needs_transformers
from tests.spawn import child_env, run_child, run_inproc

pytestmark = [needs_transformers, pytest.mark.engine, pytest.mark.long]
_MAIN = "import sys; from inproc.cli.main import run_process; run_process(sys.argv[1:])"


def test_selftest_passes_on_this_build(tmp_path):
    out = tmp_path / "selftest.json"
    p = run_child([sys.executable, "-c", _MAIN, "selftest", "--engine", "transformers", "--out", str(out)],
                  env=child_env(), timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    report = load(str(out))
    rows = {c.capability: c for c in report.checks}
    assert report.passed and report.engine == "transformers" and report.version
    for capability in ("engine internals present", "sync batching: tokens = tokens asked",
                       "sync batching: batch paired with its outputs", "sync batching: anatomy self-consistent",
                       "sync batching: capacity read", "sync batching: capacity boundary",
                       "sync batching: preemption counted", "sync batching: profiler start/stop"):
        assert rows[capability].ok, (capability, rows[capability].reason)
    assert "192 blocks of 32 (6,144 tokens)" in rows["sync batching: capacity read"].reason
    # transformers keeps no token count: the row says so, and claims no comparison with the engine's.
    assert "keeps no token count of its own" in rows["sync batching: tokens = tokens asked"].reason
    assert report.commit.startswith("unknown") or len(report.commit) == 40


def test_a_sweep_of_the_block_size_builds_the_pool_of_each(tmp_path):
    out = tmp_path / "sweep"
    p = run_inproc("sweep", str(DEFAULT_PROFILES["transformers"]), "--vary", "block-size=16,64", "--cells", "256x2",
                   "--duration", "0.5", "--max-output", "64", "--out", str(out), timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads((out / "sweep.json").read_text())
    assert [v["status"] for v in s["variants"]] == ["done", "done"], s["variants"]
    for v, size in zip(s["variants"], (16, 64)):
        rec = load_results(out / v["file"])
        cap = rec.capacity
        # The profile's 192 blocks hold size tokens each: the engine's block tables count in its own blocks.
        assert (cap.block_size, cap.num_blocks, cap.kv_tokens) == (size, 192, 192 * size)
        (entry,) = rec.decode
        assert entry.status == "Valid" and 0 < entry.figures.kv.peak_blocks <= 192, (entry.status, entry.reason)
