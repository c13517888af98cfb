"""transformers' adapter end to end: bad input in one line, and scripts/gpu/gpu_matrix_check.py run here: a cell with
its kernel pass in a child that cannot import vLLM or SGLang (the GPU machine it is for has neither)."""
from __future__ import annotations

import json
import re
import sys

import pytest

from tests.conftest import DEFAULT_PROFILES, ROOT, needs_transformers
from tests.spawn import child_env, run_child, run_mains

pytestmark = [needs_transformers, pytest.mark.engine]
PROFILE = str(DEFAULT_PROFILES["transformers"])
CELL = ["--cells", "256x2", "--no-prefill", "--window-steps", "4"]


def test_bad_settings_are_one_line_exit_2_and_nothing_written(tmp_path):
    """Each refused before the engine is built. Wrong code these fail: a field's value handed to transformers
    unchecked (a TypeError from inside it), page-size beside the profile's block-size (one silently unapplied),
    a block count of 0 built (the warm-up's "No requests can be scheduled")."""
    cases = [("no-such-field=1", r"^Error: Unknown transformers argument 'no-such-field'\..* ContinuousBatchingConfig "
              r"fields in transformers 5\.\d+\.\d+: .*num-blocks.*max-requests-per-batch.*; the model's: load-format"),
             ("block-size=2", r"^Error: transformers could not build the engine: (page_size|Block size) must be at "
              r"least 4"),
             ("use-cuda-graph=true", r"^Error: use-cuda-graph = True needs a CUDA device; this engine runs on cpu\."),
             ("block_size=banana", r"^Error: Bad transformers argument block-size = 'banana': "
              r"ContinuousBatchingConfig\.(page|block)_size takes a whole number\.$"),
             ("page_size=banana", r"^Error: 'block-size' and 'page-size' name one setting \(a cache block's "
              r"tokens\); give it once, as block-size"),
             ("num_blocks=0", r"^Error: Bad transformers argument num-blocks = 0: give a whole number of 1 or more"),
             ("max-batch-tokens=2.5", r"^Error: Bad transformers argument max-batch-tokens = 2\.5: "
              r"ContinuousBatchingConfig\.max_batch_tokens takes a whole number or null\.$"),
             # Built, then the warm-up's 64-token request fits no pool of one 32-token block: the engine's message,
             # after the stage (inproc.run.failure; until then a traceback and exit 1).
             ("num-blocks=1", r"^Error: The engine failed while it warmed up: RuntimeError: No requests can be "
              r"scheduled and no requests can be offloaded\. Settings given with --set: num-blocks=1\. Nothing was "
              r"measured and no results file was written\.$")]
    outs = [tmp_path / f"r{i}.json" for i in range(len(cases))]
    done = run_mains(*[["run", PROFILE, "--set", s, *CELL, "--out", str(o)] for (s, _), o in zip(cases, outs)])
    for (setting, pattern), p, out in zip(cases, done, outs):
        # Left out: a busy machine's warning and the run's steady-steal note, both printed before the engine is built.
        lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith(("warning: ", "note: "))]
        assert p.returncode == 2 and len(lines) == 1, (setting, p.stderr[-2000:])
        assert re.match(pattern, lines[0]), (setting, lines[0])
        assert not list(tmp_path.glob(f"{out.stem}*")), (setting, sorted(tmp_path.iterdir()))


def test_the_gpu_matrix_check_runs_here_without_vllm_or_sglang_and_judges_a_cpu_cell(tmp_path):
    """scripts/gpu/gpu_matrix_check.py, on this CPU (its hidden --cpu): its child refuses every vLLM and SGLang import
    and runs one cell with its kernel pass; the script passes what a CPU shows and fails what only a GPU can."""
    summary = tmp_path / "summary.json"
    p = run_child([sys.executable, str(ROOT / "scripts" / "gpu" / "gpu_matrix_check.py"), "--cpu", "--profile", PROFILE,
                   "--cells", "256x2", "--duration", "1", "--kernel-steps", "3", "--out", str(summary)],
                  env=child_env(sglang_support=False), timeout=600)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    got = json.loads(summary.read_text())
    assert got["engine_imports_tried"] == "" and got["engine"].startswith("transformers 5.")
    (cell,) = got["cells"]
    assert (cell["cell"], cell["status"], cell["kernel_device"], cell["kernel_note"]) == ("256x2", "Valid", "cpu", "")
    assert cell["kernel_rows"] > 0 and cell["tokens_counted"] == cell["tokens_sampled"] > 0
    assert got["checks"] == {"inproc run exit 0": True, "no vLLM or SGLang import tried": True, "1 decode cells": True,
                             "status and reason": True, "no Error cell": True,
                             "tokens counted = tokens sampled (inproc's own count)": True,
                             "kernel pass filed": False, "energy per token > 0": False, "within 150 s": got["wall_s"] <= 150}


def test_the_gpu_matrix_check_refuses_a_machine_without_cuda():
    p = run_child([sys.executable, str(ROOT / "scripts" / "gpu" / "gpu_matrix_check.py")], env=child_env(), timeout=120)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert p.stderr.strip().splitlines() == [p.stderr.strip()] and "sees no CUDA device" in p.stderr
