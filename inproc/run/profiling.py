"""Looking inside one cell: the engine's profiler over chosen steps, NVTX ranges, a breakpoint.

None of it touches a figure. Profiled steps come after the measurement window closes,
with the same C requests still in flight: K steps are skipped, then N are profiled by the
engine's own profiler (every TP rank), and the entry names the trace files and the steps.
NVTX ranges cost a push and a pop per step, inside the timed step only the engine runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inproc.errors import UsageError
from inproc.measure.trace import ProfiledSteps
from inproc.types import GRAPH_MODES, StepResult
from inproc.units import format_tokens

PROFILERS = ("torch", "cuda")


@dataclass(frozen=True)
class DebugSettings:
    """What ``inproc cell`` (and ``inproc run``) look into besides the figures; all off by default."""

    profile: Literal["torch", "cuda"] | None = None
    profile_steps: int = 10  # N: steps profiled after the window
    profile_skip: int = 0  # K: steps after the window before profiling starts
    profile_dir: str = ""
    profile_with_stack: bool = False
    nvtx: bool = False
    break_at_step: int | None = None  # breakpoint() right before this window step (1 = the first)
    break_at_slow_step: bool = False  # breakpoint() right after the window's first slow step (inproc.run.slowwatch)
    profile_slow: bool = False  # profile the window in chunks of profile_steps; keep those around the first slow step

    @property
    def watch_slow(self) -> bool:
        """Whether the window's steps are judged online (``inproc.run.slowwatch``)."""
        return self.break_at_slow_step or self.profile_slow

    def __post_init__(self) -> None:
        if self.profile is not None and self.profile not in PROFILERS:
            raise UsageError(f"Unknown profiler {self.profile!r}. Known profilers: {', '.join(PROFILERS)}.")
        if self.profile_slow and self.profile is None:
            raise UsageError("--profile-slow needs a profiler: --profile torch (or cuda).")
        if self.profile_steps < 1:
            raise UsageError(f"Bad --profile-steps {self.profile_steps}: profile at least 1 step.")
        if self.profile_skip < 0:
            raise UsageError(f"Bad --profile-skip {self.profile_skip}: it must be 0 or more steps.")
        if self.break_at_step is not None and self.break_at_step < 1:
            raise UsageError(f"Bad --break-at-step {self.break_at_step}: window steps count from 1.")


class AfterWindow:
    """Steps after the window: skip K, then run the engine's profiler over the next N."""

    def __init__(self, engine, debug: DebugSettings, name: str) -> None:
        self.engine, self.debug, self.name = engine, debug, name
        self.base = -1  # the row at which the window closed
        self.running = False
        self.result: ProfiledSteps | None = None

    def _start(self) -> None:
        d = self.debug
        self.engine.start_profile(d.profile, d.profile_dir, d.profile_with_stack, self.name)
        self.running = True

    def closed_at(self, row: int) -> bool:
        """The window closed at ``row``; True when there is nothing more to do."""
        self.base = row
        if self.debug.profile_skip == 0:
            self._start()
        return False

    def stepped(self, row: int) -> bool:
        """A step after the window ran; True once the profiled steps are done (the profiler stopped)."""
        k, d = row - self.base, self.debug
        if not self.running and k == d.profile_skip:
            self._start()
            return False
        if self.running and k == d.profile_skip + d.profile_steps:
            files = self.engine.stop_profile()
            self.running = False
            first = self.base + d.profile_skip + 1
            self.result = ProfiledSteps(d.profile, files, first, first + d.profile_steps - 1)
            return True
        return False

    def abandon(self) -> None:
        """The cell ended early (Ctrl-C, an error): leave no profiler running."""
        if self.running:
            self.engine.stop_profile()
            self.running = False


class StepRanges:
    """One NVTX range per engine step, named in the benchmark's terms, with a mark of what it ran.

    The range is opened before ``Engine.step()`` with the cell and the step; the batch and
    its CUDA-graph mode are known only once the step has run, so a mark inside the range
    (just before it closes) gives them: ``ctx=8K C=16 step=412`` / ``step=412 bs=16 graph=FULL``.
    """

    def __init__(self, nvtx, context: int, concurrency: int) -> None:
        self.nvtx, self.prefix = nvtx, f"ctx={format_tokens(context)} C={concurrency}"

    def push(self, row: int) -> None:
        self.nvtx.range_push(f"{self.prefix} step={row}")

    def pop(self, row: int, res: StepResult) -> None:
        bs = res.batch.num_reqs if res.batch is not None else res.num_running
        mark = f"step={row} bs={bs}"
        fw = res.forward
        if fw is not None and fw.graph_mode in GRAPH_MODES:
            lag = f" (batch of step {row - res.returned_lag})" if res.returned_lag > 0 else ""
            mark += f" graph={fw.graph_mode}{lag}"
        self.nvtx.mark(mark)
        self.nvtx.range_pop()
