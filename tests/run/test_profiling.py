"""Looking inside one cell on the real engines: profiled steps after the window, a breakpoint, step windows."""
from __future__ import annotations

import collections
import gzip
import json
import re

import numpy as np
import pytest

from inproc.measure import metrics as m
from inproc.plan.prompts import CellPrompts
from inproc.record.io import load_results
from inproc.run.driver import DecodeSettings
from inproc.run.profiling import AfterWindow, DebugSettings, StepRanges
from inproc.types import BatchShape, ForwardStats, StepResult
from tests.conftest import DEFAULT_PROFILES, INSTALLED
from tests.spawn import child_env, run_inproc

# What marks one engine step in each engine's own torch trace (user annotations).
STEP_EVENT = {"vllm": re.compile(r"^execute_context_\d+\(\d+\)_generation_\d+\(\d+\)$"),
              "sglang": re.compile(r"^step\[(DECODE|EXTEND|MIXED)")}


def _cli(*args, stdin: str | None = None, timeout: int = 600):
    env = child_env()
    env.pop("PYTHONBREAKPOINT", None)
    return run_inproc(*args, env=env, input=stdin, timeout=timeout)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.engine  # starts `inproc cell`
def test_profile_torch_traces_exactly_the_steps_after_the_window(engine, tmp_path):
    if not INSTALLED[engine]:
        pytest.skip(f"{engine} is not installed here")
    out, traces = tmp_path / "r.json", tmp_path / "traces"
    p = _cli("cell", str(DEFAULT_PROFILES[engine]), "--context", "256", "--concurrency", "2", "--window-steps", "12",
             "--max-output", "200", "--profile", "torch", "--profile-steps", "5", "--profile-skip", "2",
             "--profile-dir", str(traces), "--seed", "2", "--out", str(out))
    assert p.returncode == 0, p.stderr[-3000:]
    (cell,) = load_results(out).decode
    trace, w = cell.trace, m.window(cell.trace)
    prof = trace.profiled
    # Profiled steps follow the window, the anatomy's own pass where the engine has one (vLLM), and the
    # kernel pass (on by default in inproc cell).
    assert (trace.anatomy_pass is not None) == (engine == "vllm")
    kernels = trace.kernel_pass
    assert kernels.note == "" and kernels.first_step == (trace.anatomy_pass.last_step if trace.anatomy_pass else w.last_step) + 1
    after = kernels.last_step
    assert prof.kind == "torch" and (prof.first_step, prof.last_step) == (after + 3, after + 7)
    assert w.last_step - w.first_step + 1 == 12  # the window is measured clean, before any profiled step
    assert cell.figures.output_tokens == m.output_tokens(trace, w)
    (trace_file,) = [f for f in prof.files if f.endswith(".json.gz")]
    events = json.load(gzip.open(trace_file))
    events = events["traceEvents"] if isinstance(events, dict) else events
    steps = collections.Counter(e["name"] for e in events
                                if e.get("cat") == "user_annotation" and STEP_EVENT[engine].match(e.get("name", "")))
    assert sum(steps.values()) == 5, steps
    assert set(trace.steps.num_running[prof.first_step : prof.last_step + 1]) == {2}  # the same C in flight


@pytest.mark.engine  # starts `inproc cell`
def test_break_at_step_stops_once_at_that_step(tmp_path):
    engine = "vllm" if INSTALLED["vllm"] else "sglang"
    p = _cli("cell", str(DEFAULT_PROFILES[engine]), "--context", "128", "--concurrency", "1", "--window-steps", "6",
             "--max-output", "64", "--break-at-step", "3", "--telemetry-hz", "0", "--out", str(tmp_path / "r.json"),
             stdin="p window_step\np len(self.rec)\nc\n")
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.count("(Pdb)") == 3  # one stop: a prompt per command, none after 'c'
    prompts = re.findall(r"\(Pdb\) (\S+)", p.stdout)
    assert prompts[0] == "3"  # the window step about to run
    (cell,) = load_results(tmp_path / "r.json").decode
    w = m.window(cell.trace)
    assert int(prompts[1]) == w.first_step + 2  # rows recorded so far: up to the 2nd window step


def test_a_step_window_has_exactly_that_many_steps(driver, prompts):
    trace = driver.decode_cell(CellPrompts(prompts, 128, 2, "distinct", 16), DecodeSettings(2, 1e6, 400, window_steps=50))
    w = m.window(trace)
    assert w.last_step - w.first_step + 1 == 50 and trace.window_steps == 50
    assert len(trace.steps) == w.last_step + 1  # no step after it: the window closes with its last step
    assert m.output_tokens(trace, w) == 2 * 50


class FakeNvtx:
    """A fake torch.cuda.nvtx (no CUDA here): records what would reach the timeline."""

    def __init__(self) -> None:
        self.calls = []

    def range_push(self, name):
        self.calls.append(("push", name))

    def range_pop(self):
        self.calls.append(("pop",))

    def mark(self, name):
        self.calls.append(("mark", name))


def test_nvtx_ranges_are_named_in_the_benchmarks_terms():
    nvtx = FakeNvtx()
    ranges = StepRanges(nvtx, 8192, 16)
    ranges.push(412)
    ranges.pop(412, StepResult((), 16, 0, 16, batch=BatchShape(0, 0, 16, 16), returned_lag=1,
                               forward=ForwardStats("FULL", 16, 16)))
    assert nvtx.calls == [("push", "ctx=8K C=16 step=412"), ("mark", "step=412 bs=16 graph=FULL (batch of step 411)"),
                          ("pop",)]


class FakeProfilingEngine:
    """Stands in for the engine's profiler switch only (start/stop); no engine arithmetic."""

    def __init__(self):
        self.calls = []

    def start_profile(self, kind, directory, with_stack, name):
        self.calls.append(("start", kind, name))

    def stop_profile(self):
        self.calls.append(("stop",))
        return ("trace.json.gz",)


@pytest.mark.parametrize("skip", [0, 3])
def test_after_window_profiles_steps_k_plus_1_to_k_plus_n(skip):
    eng = FakeProfilingEngine()
    after = AfterWindow(eng, DebugSettings(profile="torch", profile_steps=4, profile_skip=skip), "ctx8K-C16")
    done = after.closed_at(100)
    rows = []
    while not done:
        row = 101 + len(rows)
        rows.append((row, bool(eng.calls) and eng.calls[-1][0] == "start"))
        done = after.stepped(row)
    profiled = [r for r, on in rows if on]
    assert profiled == list(range(101 + skip, 105 + skip))
    assert (after.result.first_step, after.result.last_step) == (101 + skip, 104 + skip)
    assert eng.calls == [("start", "torch", "ctx8K-C16"), ("stop",)] and not after.running
    assert np.array_equal(np.arange(after.result.first_step, after.result.last_step + 1), profiled)
