"""The sweep's manager with stand-in children (seconds, no engine): failures are data, Ctrl-C and
--resume leave a valid sweep.json. The real engines run in tests/cli/test_sweep.py."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from inproc.record.io import load_results, write_results
from inproc.run.interrupt import RunInterrupted
from inproc.sweep import run as manager
from inproc.sweep.manifest import DONE, FAILED, INTERRUPTED, PENDING, Sweep, SweepPlan, VariantRun, load_sweep
from inproc.sweep.plan import parse_varies, plan_variants
from tests.conftest import FIXTURES

FIXTURE = FIXTURES / "cpu-vllm-small.json"
# A stand-in for `inproc run`: finishes (a results file), fails as the CLI does, crashes, or
# waits, stopping on SIGINT as `inproc run` does ("wait") or ignoring it ("deaf").
CHILD = r"""
import pathlib, shutil, signal, sys, time
mode, results, fixture, ready = sys.argv[1:5]
if mode in ("finish", "nothing"):  # nothing: every cell Error, the file finished, exit 4
    shutil.copy(fixture, results)
    sys.exit(0 if mode == "finish" else 4)
if mode == "fail":
    print("loading ...")
    print("Error: vLLM rejected the arguments: max_num_seqs: bad value", file=sys.stderr)
    sys.exit(2)
if mode == "crash":
    print("Traceback (most recent call last):\n  File x\nRuntimeError: boom\nmore noise", file=sys.stderr)
    sys.exit(1)
signal.signal(signal.SIGINT, (lambda *a: sys.exit(130)) if mode == "wait" else signal.SIG_IGN)
pathlib.Path(ready).touch()
time.sleep(60)
"""


def _sweep(n: int) -> Sweep:
    varies = parse_varies((f"max-num-seqs={','.join(str(4 * (i + 1)) for i in range(n))}",))
    plan = SweepPlan("/p.toml", "p", "vllm", varies, False, ("--no-prefill",), 7)
    return Sweep(plan, tuple(VariantRun(v) for v in plan_variants(varies)), "inproc sweep ...", "now")


@pytest.fixture()
def children(monkeypatch, tmp_path):
    """Set the stand-in's mode per variant index; every start is recorded as (index, resume)."""
    modes, calls = {}, []

    def argv(sweep, run, directory, resume):
        calls.append((run.variant.index, resume))
        ready = tmp_path / f"ready-{run.variant.index}"
        return [sys.executable, "-c", CHILD, modes[run.variant.index], str(directory / run.variant.file),
                str(FIXTURE), str(ready)]

    monkeypatch.setattr(manager, "child_argv", argv)
    return modes, calls


def _interrupt_when_ready(ready: Path, times: int = 1) -> threading.Thread:
    def send():
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(times):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_a_failed_variant_is_recorded_and_the_sweep_goes_on(children, tmp_path):
    modes, calls = children
    modes.update({1: "fail", 2: "crash", 3: "finish"})
    lines = []
    done = manager.run_sweep(_sweep(3), tmp_path, echo=lines.append)
    assert [r.status for r in done.runs] == [FAILED, FAILED, DONE] and done.finished
    assert done.runs[0].error == "vLLM rejected the arguments: max_num_seqs: bad value" and done.runs[0].returncode == 2
    assert done.runs[1].error == "exited with status 1: RuntimeError: boom"
    assert load_sweep(tmp_path) == done  # the file says what the manager returned
    assert "loading ..." in (tmp_path / done.runs[0].variant.log).read_text()  # the child's output is kept
    assert any("[1/3] max-num-seqs=4: failed: vLLM rejected" in line for line in lines)


def test_a_variant_that_measured_no_cell_is_done_its_errors_are_data(children, tmp_path):
    modes, _ = children
    modes.update({1: "nothing", 2: "finish"})
    done = manager.run_sweep(_sweep(2), tmp_path, echo=lambda line: None)
    assert [r.status for r in done.runs] == [DONE, DONE] and done.runs[0].returncode == 4 and done.runs[0].error == ""


def test_ctrl_c_stops_the_variant_and_resume_runs_only_the_rest(children, tmp_path):
    modes, calls = children
    modes.update({1: "finish", 2: "wait", 3: "finish"})
    _interrupt_when_ready(tmp_path / "ready-2")
    with pytest.raises(RunInterrupted, match="--resume"):
        manager.run_sweep(_sweep(3), tmp_path, echo=lambda line: None)
    stopped = load_sweep(tmp_path)
    assert [r.status for r in stopped.runs] == [DONE, INTERRUPTED, PENDING] and not stopped.finished
    assert stopped.runs[1].returncode == 130 and "interrupted" in stopped.notes[-1]
    # Variant 2 left a partial results file: the resumed child continues it.
    partial = load_results(FIXTURE)
    write_results(tmp_path / stopped.runs[1].variant.file, dataclasses.replace(partial, finished=False))
    first = (tmp_path / stopped.runs[0].variant.file).stat().st_mtime_ns
    modes.update({2: "finish"})
    calls.clear()
    done = manager.run_sweep(stopped, tmp_path, echo=lambda line: None)
    assert calls == [(2, True), (3, False)]  # variant 1 is not run again
    assert [r.status for r in done.runs] == [DONE] * 3 and [r.attempts for r in done.runs] == [1, 2, 1]
    assert (tmp_path / done.runs[0].variant.file).stat().st_mtime_ns == first


def test_a_second_ctrl_c_kills_a_child_that_does_not_stop(children, tmp_path):
    import psutil

    modes, _ = children
    modes.update({1: "deaf", 2: "finish"})
    _interrupt_when_ready(tmp_path / "ready-1", times=2)
    with pytest.raises(RunInterrupted):
        manager.run_sweep(_sweep(2), tmp_path, echo=lambda line: None)
    s = json.loads((tmp_path / "sweep.json").read_text())
    assert [v["status"] for v in s["variants"]] == [INTERRUPTED, PENDING] and "second Ctrl-C" in s["variants"][0]["error"]
    left = [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path / "ready-1") in " ".join(p.info["cmdline"] or [])]
    assert not left


def test_failure_lines():
    assert manager.failure_line(2, ["x", "Error: Bad --set 'a'.", ""]) == "Bad --set 'a'."
    assert manager.failure_line(-9, ["step 3"]) == "killed by SIGKILL: step 3"
    assert manager.failure_line(1, ["torch.OutOfMemoryError: CUDA out of memory", "  at exit"]) == \
        "exited with status 1: torch.OutOfMemoryError: CUDA out of memory"
    assert manager.failure_line(-6, []) == "killed by SIGABRT"
