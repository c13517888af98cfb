"""``inproc selftest`` on the installed SGLang: every check holds, and a deleted internal is one line, exit 1."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from inproc.selftest.report import load
from tests.engines.sglang.conftest import needs_sglang
from tests.spawn import child_env, run_child

pytestmark = [needs_sglang, pytest.mark.engine]


def _run(code: str, *argv: str) -> subprocess.CompletedProcess:
    return run_child([sys.executable, "-c", code, *argv], timeout=900, env=child_env())


@pytest.mark.long
def test_selftest_passes_on_this_build(tmp_path):
    out = tmp_path / "selftest.json"
    p = _run("import sys; from inproc.cli.main import run_process; run_process(sys.argv[1:])", "selftest", "--engine", "sglang",
             "--out", str(out))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    report = load(str(out))
    rows = {c.capability: c for c in report.checks}
    assert report.passed and report.engine == "sglang"
    assert "returns them 0 after" in rows["normal loop: batch paired with its outputs"].reason
    assert "returns them 1 after" in rows["overlap loop: batch paired with its outputs"].reason
    assert rows["normal loop: preemption counted"].ok is None  # not forced on SGLang: the row says why
    assert rows["normal loop: profiler start/stop"].ok and rows["normal loop: capacity boundary"].ok
    assert rows["overlap loop: tokens = engine's counters"].ok and rows["overlap loop: anatomy self-consistent"].ok


@pytest.mark.long
def test_a_deleted_internal_is_one_line_and_exit_1():
    code = textwrap.dedent("""
        import os, sys
        os.environ["SGLANG_USE_CPU_ENGINE"] = "1"
        import sglang.srt.managers.scheduler as scheduler
        del scheduler.Scheduler.get_next_batch_to_run  # as if this build had renamed it
        from inproc.cli.main import run_process
        run_process(sys.argv[1:])
    """)
    p = _run(code, "selftest", "--engine", "sglang")
    assert p.returncode == 1 and "Traceback" not in p.stderr and p.stdout == ""
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("selftest")]
    assert len(lines) == 1 and "'sglang.srt.managers.scheduler:Scheduler.get_next_batch_to_run'" in lines[0], p.stderr[-2000:]
