"""``inproc selftest`` on the installed vLLM: every check holds, and a deleted internal is one line, exit 1."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from inproc.selftest.report import load
from tests.conftest import needs_vllm
from tests.spawn import child_env, run_child

pytestmark = [needs_vllm, pytest.mark.engine]


def _run(code: str, *argv: str) -> subprocess.CompletedProcess:
    env = child_env()
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)
    return run_child([sys.executable, "-c", code, *argv], timeout=900, env=env)


_MAIN = "import sys; from inproc.cli.main import run_process; run_process(sys.argv[1:])"


@pytest.mark.long
def test_selftest_passes_on_this_build(tmp_path):
    out = tmp_path / "selftest.json"
    p = _run(_MAIN, "selftest", "--engine", "vllm", "--out", str(out))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    report = load(str(out))
    rows = {c.capability: c for c in report.checks}
    assert report.passed and report.engine == "vllm" and report.version and report.elapsed_s > 0
    for mode, lag in (("sync scheduling", 0), ("async scheduling", 1)):
        assert rows[f"{mode}: batch paired with its outputs"].ok
        assert f"returns them {lag} after" in rows[f"{mode}: batch paired with its outputs"].reason
    for capability in ("engine internals present", "sync scheduling: preemption counted", "sync scheduling: capacity read",
                       "sync scheduling: capacity boundary", "sync scheduling: profiler start/stop",
                       "ngram drafts: speculative counters move", "ngram drafts: tokens = engine's counters"):
        assert rows[capability].ok, rows[capability]
    drafts = int(rows["ngram drafts: speculative counters move"].reason.split()[0])
    assert drafts > 0
    assert "✓" in p.stdout and "✗" not in p.stdout and json.loads(out.read_text())["passed"] is True


@pytest.mark.long
def test_a_deleted_internal_is_one_line_and_exit_1():
    code = textwrap.dedent("""
        import sys
        from inproc.engines.vllm import ADAPTER, args
        ADAPTER.quiet()
        import vllm.v1.core.sched.scheduler as scheduler
        del scheduler.Scheduler.update_from_output  # as if this build had renamed it
        from inproc.cli.main import run_process
        run_process(sys.argv[1:])
    """)
    p = _run(code, "selftest", "--engine", "vllm")
    assert p.returncode == 1 and "Traceback" not in p.stderr and p.stdout == ""
    (line,) = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert line.startswith("selftest failed: vLLM ")
    assert "'vllm.v1.core.sched.scheduler:Scheduler.update_from_output'" in line
