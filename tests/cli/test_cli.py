"""The command line, as a user runs it: one-line errors with exit 2, and real end-to-end runs.

Bad input stops before any engine is built, so those cases run the CLI in the test's own process
(``tests.spawn.run_main``: no interpreter start, no engine import); the runs are child processes.
"""
from __future__ import annotations

import json

import pytest

from inproc import types as st
from inproc.plan.capacity import max_concurrency_at_max_len
from inproc.record.io import SCHEMA_VERSION, load_results, to_json
from inproc.types import Capacity, KVCacheGroup
from tests.conftest import DEFAULT_PROFILE, PROFILES, needs_vllm
from tests.spawn import run_inproc as inproc
from tests.spawn import run_main

pytestmark = pytest.mark.engine  # every test here starts `python -m inproc` or parses with the engine imported


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "no/such/profile.toml"], "'no/such/profile.toml'"),
        (["run", str(DEFAULT_PROFILE), "--concurrency", "0"], "'0'"),
        (["cell", str(DEFAULT_PROFILE), "--context", "12Q", "--concurrency", "1"], "'12Q'"),
        (["run", str(DEFAULT_PROFILE), "--contexts", "16K"], "16K"),
        (["cell", str(DEFAULT_PROFILE), "--context", "1K", "--concurrency", "1,2"], "'1,2'"),
        (["run", str(DEFAULT_PROFILE), "--prompt-mode", "both"], "'both'"),
        (["run", str(DEFAULT_PROFILE), "--max-output", "0"], "--max-output 0"),
        # Numbers that cannot run: a window of NaN or infinity would never close.
        (["run", str(DEFAULT_PROFILE), "--duration", "nan"], "Bad --duration nan: it must be a finite number"),
        (["cell", str(DEFAULT_PROFILE), "--context", "1K", "--concurrency", "1", "--duration", "inf"], "--duration inf"),
        (["run", str(DEFAULT_PROFILE), "--temperature", "nan"], "--temperature nan"),
        (["run", str(DEFAULT_PROFILE), "--prefill-samples", "0"], "--prefill-samples 0"),
        (["run", str(DEFAULT_PROFILE), "--telemetry-hz", "inf"], "Bad telemetry rate inf Hz"),
        # CUDA-only debugging on a machine without CUDA.
        (["cell", str(DEFAULT_PROFILE), "--context", "1K", "--concurrency", "1", "--nvtx"], "--nvtx needs CUDA"),
        (["cell", str(DEFAULT_PROFILE), "--context", "1K", "--concurrency", "1", "--profile", "cuda"],
         "--profile cuda needs CUDA"),
        (["cell", str(DEFAULT_PROFILE), "--context", "1K", "--concurrency", "1", "--break-at-step", "0"],
         "--break-at-step 0"),
        (["run", str(DEFAULT_PROFILE), "--window-steps", "0"], "Bad --window-steps 0"),
        # An explicitly empty list is an error, not "the profile's default".
        (["run", str(DEFAULT_PROFILE), "--contexts", ""], "Empty context list ''"),
        (["run", str(DEFAULT_PROFILE), "--concurrency", ""], "Empty concurrency list ''"),
        (["run", str(DEFAULT_PROFILE), "--prefill-contexts", ""], "Empty prefill context list ''"),
        (["run", str(DEFAULT_PROFILE), "--cells", "256x8", "--contexts", "256"], "--cells"),
        (["run", str(DEFAULT_PROFILE), "--cells", "256x8,256"], "Bad cell '256'"),
        (["run", str(DEFAULT_PROFILE), "--no-prefill", "--prefill-contexts", "1K"], "--no-prefill"),
        (["run", str(DEFAULT_PROFILE), "--set", "env.2BAD=1"], "'2BAD'"),
        (["report-typo"], "report-typo"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle, tmp_path, capfd):
    out = tmp_path / "r.json"
    p = run_main(capfd, *args, "--out", str(out)) if args[0] in ("run", "cell") else run_main(capfd, *args)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), p.stderr
    assert needle in lines[0]
    assert "Traceback" not in p.stderr
    assert not out.exists()


def test_existing_results_file_is_not_overwritten(tmp_path, capfd):
    out = tmp_path / "r.json"
    out.write_text("{}")
    p = run_main(capfd, "run", str(DEFAULT_PROFILE), "--out", str(out))
    assert p.returncode == 2 and "--force" in p.stderr
    assert out.read_text() == "{}"


def _full(path):
    """A results file as one JSON object: the manifest's rows completed from their cell files, raw records inline."""
    return json.loads(json.dumps(to_json(load_results(path))))


#: The end-to-end run's decode window, seconds: several steps of its largest cell (10 x 4K) on a machine
#: four times slower than 2 quiet cores (a window that closes before its first step ends holds none).
WINDOW_S = "2"


@needs_vllm
def test_run_end_to_end_shows_every_status(tmp_path):
    """A small matrix on the real engine: Valid, Requests queued and Over capacity all occur."""
    out = tmp_path / "r.json"
    p = inproc("run", str(DEFAULT_PROFILE), "--contexts", "256,4K", "--concurrency", "2,10", "--duration", WINDOW_S,
               "--max-output", "64", "--prefill-contexts", "1K", "--prefill-samples", "2", "--seed", "7",
               "--set", "num-gpu-blocks-override=300", "--out", str(out))
    assert p.returncode == 0, p.stderr[-3000:]
    rec = _full(out)
    assert rec["schema_version"] == SCHEMA_VERSION and rec["finished"] is True
    assert rec["capacity"]["num_blocks"] == 300  # the --set override reached the engine
    assert rec["profile"]["overrides"] == ["num-gpu-blocks-override=300"]
    (pre,) = rec["prefill"]
    assert pre["status"] == st.VALID and pre["samples"] == 2 and pre["cached_tokens"] == 0 and pre["prefix_hits"] == 0
    cells = {(c["context"], c["concurrency"]): c for c in rec["decode"]}
    assert cells[(256, 2)]["status"] == st.VALID
    assert cells[(256, 10)]["status"] == st.QUEUED and "max_num_seqs=8 < C=10" in cells[(256, 10)]["reason"]
    # 10 x (4096 + 64) tokens: 1 shared context (127 full blocks) + 10 x 3 blocks = 157 <= 300; 2 fit too.
    shared = cells[(4096, 10)]
    assert shared["status"] == st.QUEUED and shared["capacity_check"]["blocks_needed"] == 157
    # Distinct arithmetic is recorded beside the published matrices' rule C x (L + M).
    chk = cells[(4096, 2)]["capacity_check"]
    assert chk["reference_tokens_needed"] == 2 * (4096 + 64)
    for c in rec["decode"]:
        if c["status"] in (st.VALID, st.QUEUED):
            assert c["output_tokens"] > 0 and 0 < c["window_s"] <= float(WINDOW_S)
            assert c["total_tok_s"] == pytest.approx(c["output_tokens"] / c["window_s"])
            assert "inproc cell" in c["reproduce"] and "--seed 7" in c["reproduce"]
    assert "Requests queued" in p.stdout
    # Host telemetry is real on this CPU machine; GPU figures are null with the reason.
    tel = cells[(256, 2)]["telemetry"]
    figs = tel["figures"]
    assert 0 < figs["host_cpu_util_pct"] <= 100 and figs["max_rss_bytes"] > 100e6
    assert figs["energy_j"] is None and "NVML" in figs["reasons"]["energy_j"]
    assert tel["throttle"]["passed"] is None and "not judged" in tel["throttle"]["reason"]
    assert "not_throttled" not in cells[(256, 2)]["checks_passed"]
    assert pre["telemetry"]["figures"]["window_s"] > 0


@needs_vllm
def test_over_capacity_cell_is_not_run(tmp_path):
    out = tmp_path / "r.json"
    p = inproc("cell", str(DEFAULT_PROFILE), "--context", "4K", "--concurrency", "8", "--prompt-mode", "distinct",
               "--max-output", "64", "--set", "num-gpu-blocks-override=300", "--out", str(out))
    assert p.returncode == 4, p.stderr[-3000:]  # no cell measured: one Over capacity cell, decided beforehand
    (cell,) = _full(out)["decode"]
    assert cell["status"] == st.OVER_CAPACITY and cell["trace"] is None
    # 8 x ceil((4096 + 64) / 32) = 8 x 130 = 1040 blocks needed; 300 minus vLLM's null block available.
    assert cell["capacity_check"]["blocks_needed"] == 1040 and cell["capacity_check"]["blocks_available"] == 299
    assert "1,040 KV blocks" in cell["reason"] and "has 299 (9,568 tokens)" in cell["reason"]


@pytest.mark.long
@needs_vllm
def test_mla_model_capacity_matches_engine(shipped_run):
    """Tiny DeepSeek-V3 (MLA + MoE): our block arithmetic agrees with vLLM's max concurrency.

    Read from the run of its shipped matrix (``shipped_run``, which its profile's test makes too)."""
    rec = json.loads(shipped_run(PROFILES / "cpu-vllm-tiny-deepseek-v3.toml").read_text())
    cap = rec["capacity"]
    assert [g["kind"] for g in cap["groups"]] == ["mla"]
    capacity = Capacity(**{**cap, "groups": tuple(KVCacheGroup(**g) for g in cap["groups"])})
    assert max_concurrency_at_max_len(capacity) == pytest.approx(cap["engine_max_concurrency"])
    cell = next(c for c in rec["decode"] if (c["context"], c["concurrency"]) == (256, 2))
    assert cell["status"] == st.VALID and cell["output_tokens"] > 0


@needs_vllm
def test_spec_decode_acceptance_and_looped_on_greedy_dummy_weights(tmp_path):
    """n-gram speculation on the real engine: greedy dummy weights loop, drafts are all accepted."""
    from inproc.record.io import load_results
    from inproc.measure import metrics as m

    out = tmp_path / "r.json"
    p = inproc("cell", str(PROFILES / "cpu-vllm-tiny-llama-ngram.toml"), "--context", "256", "--concurrency", "2",
               "--duration", "2", "--max-output", "3500", "--temperature", "0", "--out", str(out))
    assert p.returncode == 0, p.stderr[-3000:]
    (cell,) = json.loads(out.read_text())["decode"]
    assert cell["status"] == st.LOOPED and "period" in cell["reason"]
    assert cell["spec_acceptance_rate"] == pytest.approx(1.0)  # a loop is perfectly predictable
    assert cell["spec_mean_acceptance_length"] > 2
    # Every verify step returns one token plus the drafts it accepted: exact over the window
    # while no request ends in it (a finishing request's accepted drafts are cut at max_tokens).
    assert cell["completed"] == 0
    (entry,) = load_results(out).decode
    w = m.window(entry.trace)
    arrivals = sum(sum(1 for s in r.token_steps if w.first_step <= s <= w.last_step) for r in entry.trace.requests)
    assert cell["output_tokens"] == arrivals + m.counter_delta(entry.trace, "spec_accepted_tokens")
