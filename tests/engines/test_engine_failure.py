"""An engine that fails while warming up: one line with the engine's own message and the --set override behind it
where the message names it, exit 2, no results file (``inproc.run.failure``). transformers' case (num-blocks=1) is in
tests/engines/transformers/test_engine.py, in the child its other bad settings share."""
from __future__ import annotations

import pytest

from tests.conftest import ROOT, needs_vllm
from tests.spawn import run_mains

pytestmark = [pytest.mark.engine]
CELL = ["--cells", "256x2", "--no-prefill", "--window-steps", "4"]
NGRAM = str(ROOT / "launch_profiles" / "cpu-vllm-tiny-llama-ngram.toml")


def _one_line_run(tmp_path, profile: str, sets: list[str], line: str) -> None:
    """``inproc run PROFILE --set ...`` exits 2 with ``line`` its only line, and leaves no file."""
    out = tmp_path / "r.json"
    (p,) = run_mains(["run", profile, *[a for s in sets for a in ("--set", s)], *CELL, "--out", str(out)])
    # Beside inproc's line: its busy-machine warning, and torch's C++ notices at build ("[W...] Warning: NUMA").
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith(("warning: ", "[W"))]
    assert p.returncode == 2 and lines == [line], (sets, p.stderr[-3000:])
    assert sorted(tmp_path.iterdir()) == []


@needs_vllm
@pytest.mark.long
def test_a_vllm_first_step_that_asserts_is_one_line_naming_the_setting(tmp_path):
    """vLLM asserts in its first step that synthetic acceptance needs GPU sampling; the message names the value of
    one of the two overrides. Wrong code this fails: a traceback and exit 1, EngineCore's ERROR dump on stderr, or
    both overrides blamed."""
    _one_line_run(tmp_path, NGRAM, ["speculative-config.rejection_sample_method=synthetic",
                                    "speculative-config.synthetic_acceptance_length=2.0"],
                  "Error: The engine failed while it warmed up: AssertionError: Synthetic acceptance not supported "
                  "with CPU sampling. Caused by --set speculative-config.rejection_sample_method=synthetic. Nothing "
                  "was measured and no results file was written.")
