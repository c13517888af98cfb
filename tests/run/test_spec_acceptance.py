"""Acceptance per draft position on a real vLLM n-gram run on the CPU, and a forced acceptance the CPU build refuses."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inproc.measure import metrics as m
from inproc.measure.steps import SPEC_POSITIONS
from inproc.record.io import load_results
from tests.conftest import needs_vllm

pytestmark = [needs_vllm, pytest.mark.engine]

NGRAM = Path(__file__).resolve().parents[2] / "launch_profiles" / "cpu-vllm-tiny-llama-ngram.toml"  # 3 draft tokens


def test_per_position_counts_sum_to_the_engines_own_totals(run_inproc, tmp_path):
    # Greedy: the dummy weights repeat themselves, so every n-gram draft is the target's own continuation.
    out = tmp_path / "greedy.json"
    run = run_inproc("cell", str(NGRAM), "--context", "256", "--concurrency", "4", "--window-steps", "24",
                     "--temperature", "0", "--kernels", "off", "--out", str(out), timeout=300)
    assert out.exists(), run.stderr[-3000:]
    entry = load_results(out).decode[0]
    trace, a = entry.trace, entry.figures.acceptance
    w = m.window(trace)
    rows = slice(w.first_step, w.last_step + 1)
    steps = trace.steps
    # The window's rows against the engine's cumulative counters read at the window's two ends (another
    # source: vLLM's SchedulerStats summed by the probe). Would fail: per-step counts filed under the step that
    # formed the batch, one output's stats of several read, a row per step double-counted, positions misnumbered.
    assert a.drafts == m.counter_delta(trace, "spec_drafts") > 0
    assert a.draft_tokens == m.counter_delta(trace, "spec_draft_tokens")
    assert a.accepted_tokens == m.counter_delta(trace, "spec_accepted_tokens")
    assert sum(a.accepted_at) == a.accepted_tokens and sum(a.drafted_at) == a.draft_tokens  # k = 3 <= SPEC_POSITIONS
    assert len(a.accepted_at) == 3 < SPEC_POSITIONS
    assert int(steps.spec_drafts[rows].clip(min=0).sum()) == a.drafts
    # Greedy on a repeating model: every draft accepted, at every position.
    assert a.accepted_at == a.drafted_at and a.conditional == (1.0, 1.0, 1.0)
    assert a.mean_length == pytest.approx(1 + a.accepted_tokens / a.drafts)
    assert a.mean_length == pytest.approx(entry.figures.spec_mean_acceptance_length)
    assert np.all(steps.spec_drafts[rows] >= 0)  # every window row counted (zeros where no draft was verified)
    report = out.with_suffix(".md")
    if report.exists():
        assert "## Draft acceptance" in report.read_text()


@pytest.mark.long
def test_forced_acceptance_refused_by_the_cpu_sampler_is_one_line(run_inproc, tmp_path):
    # vLLM's CPU sampler asserts at the first verify step: "Synthetic acceptance not supported with CPU sampling".
    out = tmp_path / "forced.json"
    run = run_inproc("cell", str(NGRAM), "--context", "256", "--concurrency", "1", "--duration", "1", "--temperature", "0",
                     "--kernels", "off", "--acceptance", "2", "--out", str(out), timeout=300)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "Synthetic acceptance not supported with CPU sampling" in lines[-1]
    assert not out.exists()  # nothing measured: no results file, not even a half-written one
