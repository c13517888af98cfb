"""A forced acceptance as SGLang reads it: the simulate variables inproc sets, read by the installed SGLang's
``spec_utils`` when it first loads, as the adapter's after-build check reads them."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from inproc.plan.acceptance import Acceptance
from inproc.profiles.spec import load_with_overrides
from tests.conftest import needs_sglang
from tests.spawn import run_child

pytestmark = [needs_sglang, pytest.mark.engine]  # a child imports SGLang's speculative modules

PROFILE = Path(__file__).resolve().parents[3] / "launch_profiles" / "cpu-sglang-tiny-llama.toml"
_READ = """
from sglang.srt.speculative import spec_utils
print("READ", spec_utils.SIMULATE_ACC_LEN, spec_utils.SIMULATE_ACC_METHOD, spec_utils.SIMULATE_ACC_TOKEN_MODE)
spec_utils.check_simulate_acc_token_mode()
"""


def test_sglang_reads_the_forced_length_inproc_sets(tmp_path):
    p = tmp_path / "eagle.toml"
    p.write_text(PROFILE.read_text().replace("[env]", "speculative-algorithm = \"EAGLE\"\nspeculative-num-steps = 3\n\n[env]"))
    launch = load_with_overrides(p, (), Acceptance(length=2.5)).launch
    import os

    run = run_child([sys.executable, "-c", _READ], env={**os.environ, **launch.env}, timeout=300)
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith("READ ")), None)
    # Would fail: a variable misnamed (SGLang's default -1 read), the length written so SGLang's EnvFloat cannot
    # parse it, or a token mode SGLang's own check refuses (it raises here).
    assert run.returncode == 0 and line == "READ 2.5 match-expected real-draft-token", run.stdout + run.stderr[-2000:]
