"""The kernel pass's profiler: torch's own profiler over chosen engine steps of this process (torch imported
lazily: only the engine adapters use this).

Each profiled step runs inside a step mark (``torch.profiler.record_function``). When the pass
stops, the profiler's trace is exported in Chrome format and read by the one reader,
:func:`inproc.kernels.filing.file_events`, the same that ``inproc kernels`` runs on a saved
trace: what a row times, how device activities are filed to the step that launched them, and
what counts as unfiled are that module's docstring. The trace is kept where the pass was given a
folder (``NAME.kernels.pt.trace.json``), so ``inproc kernels`` on it gives the cell's table again.
"""
from __future__ import annotations

import gc
import os
import tempfile
from typing import Any, Callable

from inproc.kernels.chrome import load_trace
from inproc.kernels.filing import MARK, FiledTrace, file_events

__all__ = ["MARK", "KernelProfiler", "start_trace", "stop_trace"]


def start_trace(device: str, with_stack: bool = False):
    """torch's profiler started in this process on the CPU, and on CUDA where ``device`` is "cuda"."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    prof = profile(activities=activities, with_stack=with_stack)
    prof.start()
    return prof


def stop_trace(prof, path: str) -> None:
    """Stop ``prof`` (torch waits for the device first) and write its Chrome trace to ``path``."""
    prof.stop()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    prof.export_chrome_trace(path)


class KernelProfiler:
    """torch's profiler over the steps run through :meth:`step`, in this process; :meth:`stop` files them.

    ``trace_dir``: where its Chrome trace goes (``NAME.kernels.pt.trace.json``); "" keeps none.
    """

    def __init__(self, device: str, trace_dir: str = "", name: str = "cell") -> None:
        self.device, self.trace_dir, self.name = device, trace_dir, name
        self._prof = None

    def start(self) -> None:
        """Start profiling (a profiler already running in this process raises RuntimeError)."""
        self._prof = start_trace(self.device)

    def step(self, run: Callable[[], Any]) -> Any:
        """``run()`` (one engine step) inside a step mark."""
        from torch.profiler import record_function

        with record_function(MARK):
            return run()

    def stop(self) -> tuple[FiledTrace, tuple[str, ...]]:
        """Stop (torch waits for the device first); the steps filed (numbered from 0) and the trace file kept
        (none unless ``trace_dir``). A trace that cannot be read raises ValueError."""
        prof, self._prof = self._prof, None
        prof.stop()
        if self.trace_dir:
            os.makedirs(self.trace_dir, exist_ok=True)
            path = os.path.join(self.trace_dir, f"{self.name}.kernels.pt.trace.json")
            files: tuple[str, ...] = (path,)
        else:
            fd, path = tempfile.mkstemp(prefix="inproc-kernels-", suffix=".json")
            os.close(fd)
            files = ()
        try:
            prof.export_chrome_trace(path)
            filed = file_events(load_trace(path), MARK, self.device)
        finally:
            if not files:
                os.remove(path)
        del prof
        # The profiler's results hold many reference cycles: collect them now, outside every window,
        # rather than leave them to a collection inside the next cell's steps.
        gc.collect()
        return filed, files

    def abandon(self) -> None:
        """Stop without reading anything (the cell ended early)."""
        prof, self._prof = self._prof, None
        if prof is not None:
            prof.stop()
