"""The kernel pass: N engine steps under torch's profiler, after the window and the anatomy's own pass.

The same requests stay in flight (refilled as in the window), so the pass sees the cell's
batches; nothing it measures feeds a headline figure, and no window step is ever profiled.
The engine gives the profiler (``Engine.kernel_profiler``: it knows where its forward runs);
what a row of the table times is the docstring of ``inproc.engines.torchprof``. A pass that
cannot run, or whose profiler fails, leaves its reason in the cell (``KernelPass.note``) and
the cell's figures as measured.
"""
from __future__ import annotations

from typing import Any, Callable

from inproc.engines.base import KernelsUnavailable
from inproc.kernels.table import KernelTable
from inproc.measure.trace import KernelPass


class KernelPassRun:
    """Runs one cell's kernel pass: :meth:`start` when the steps before it are done, :meth:`end` after its last."""

    def __init__(self, engine, steps: int, trace_dir: str, name: str) -> None:
        self.engine, self.steps, self.trace_dir, self.name = engine, steps, trace_dir, name
        self.profiler = None
        self.first = -1
        self.result: KernelPass | None = None
        self.table: KernelTable | None = None

    def start(self, last_row: int) -> int:
        """Start profiling; the next step is row ``last_row + 1``. The pass's steps (0: it cannot run, note kept)."""
        self.first = last_row + 1
        try:
            profiler = self.engine.kernel_profiler(self.trace_dir, self.name)
            profiler.start()
        except (KernelsUnavailable, AttributeError, RuntimeError, OSError) as e:
            self.result = KernelPass(self.first, last_row, "", f"no kernel pass: {_one_line(e)}")
            return 0
        self.profiler = profiler
        return self.steps

    def wrap(self, run: Callable[[], Any]) -> Callable[[], Any]:
        """``run`` (the engine's step) inside the profiler's step mark."""
        profiler = self.profiler
        return lambda: profiler.step(run)

    def end(self, last_row: int) -> None:
        """The pass's last step was row ``last_row``: stop and keep the table (or the profiler's failure)."""
        profiler, self.profiler = self.profiler, None
        try:
            filed, files = profiler.stop()
        except (RuntimeError, OSError, ValueError) as e:
            self.result = KernelPass(self.first, last_row, profiler.device, f"the profiler failed: {_one_line(e)}")
            return
        table = filed.table
        self.table = KernelTable(table.step + self.first, table.name, table.category, table.calls, table.device_ns,
                                 table.device)
        self.result = KernelPass(self.first, last_row, profiler.device, "", files, filed.filed, filed.unfiled,
                                 filed.unfiled_ns)

    def abandon(self, last_row: int) -> None:
        """If the cell ended inside the pass (Ctrl-C, an error): stop the profiler, keep no table."""
        profiler, self.profiler = self.profiler, None
        if profiler is not None:
            profiler.abandon()
            self.result = KernelPass(self.first, last_row, profiler.device, "the cell ended before the pass did")


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__
