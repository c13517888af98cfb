"""The kernel pass's profiler: torch's own profiler over chosen engine steps of this process, read into a
:class:`~inproc.kernels.table.KernelTable` (torch imported lazily: only the engine adapters use this).

Each profiled step runs inside a step mark (``torch.profiler.record_function``), and an event
belongs to the step whose mark holds its start (the launching call's, for a device kernel), on
whichever thread it ran. What a row times:

- **CUDA**: each device activity (kernels, memcpy, memset) and its duration on the device, filed
  under the step whose mark holds the host call that launched it (its linked correlation id; a
  device event whose launcher the profiler did not keep is filed by its own start).
- **CPU**: each operator's *self* time: its span less the spans of the operators called inside it
  (looking through user annotations between them), so ``aten::linear`` keeps only its own
  dispatch and the ``aten::mm`` inside it keeps the multiply. Every moment inside an operator
  is counted once, under the innermost operator running then (the leaf at that moment); the
  rows of a step sum to the time its thread(s) spent inside operators. User annotations
  (record_function ranges, the step marks themselves) are not operators: the Python between
  operators is in no row.
"""
from __future__ import annotations

import gc
import os
from typing import Any, Callable, Iterable

from inproc.kernels.table import KernelTable

MARK = "inproc step"
_NS_PER_US = 1000.0


def _span_us(e: Any) -> float:
    return e.time_range.end - e.time_range.start


def _on_cpu(e: Any) -> bool:
    return getattr(e.device_type, "name", str(e.device_type)) == "CPU"


def _is_operator(e: Any) -> bool:
    return _on_cpu(e) and not e.is_user_annotation and not getattr(e, "is_async", False) \
        and not getattr(e, "is_python_function", False)


def self_us(e: Any) -> float:
    """An operator's self time (µs): its span less the spans of the nearest operators inside it."""
    own, todo = _span_us(e), list(e.cpu_children)
    while todo:
        child = todo.pop()
        if _is_operator(child):
            own -= _span_us(child)
        else:
            todo.extend(child.cpu_children)  # an annotation inside an operator: look through it
    return own


def step_of(starts: list[float], ends: list[float], t_us: float) -> int:
    """The index of the mark holding ``t_us`` (marks sorted, not overlapping), -1 outside every mark."""
    lo, hi = 0, len(starts)
    while lo < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= t_us:
            lo = mid + 1
        else:
            hi = mid
    i = lo - 1
    return i if i >= 0 and t_us < ends[i] else -1


def table_from_events(events: Iterable[Any], device: str) -> KernelTable:
    """The kernel table of a profile's events (torch's ``FunctionEvent`` list); steps numbered 0.. by mark."""
    events = list(events)
    marks = sorted((e for e in events if e.name == MARK and _on_cpu(e)), key=lambda e: e.time_range.start)
    starts, ends = [m.time_range.start for m in marks], [m.time_range.end for m in marks]
    rows: dict[tuple[int, str], list[float]] = {}

    def add(step: int, name: str, us: float) -> None:
        if step >= 0:
            r = rows.setdefault((step, name), [0, 0.0])
            r[0] += 1
            r[1] += us

    if device == "cpu":
        for e in events:
            if _is_operator(e):
                add(step_of(starts, ends, e.time_range.start), e.name, self_us(e))
    else:
        launch = {e.id: e.time_range.start for e in events if _on_cpu(e) and e.id > 0}
        for e in events:
            if not _on_cpu(e):
                linked = getattr(e, "linked_correlation_id", 0)  # 0: no launcher kept
                t = launch.get(linked, e.time_range.start) if linked > 0 else e.time_range.start
                add(step_of(starts, ends, t), e.name, _span_us(e))
    return KernelTable.of_rows({k: (int(c), int(round(us * _NS_PER_US))) for k, (c, us) in rows.items()}, device)


class KernelProfiler:
    """torch's profiler over the steps run through :meth:`step`, in this process; :meth:`stop` gives the table.

    ``trace_dir``: where its Chrome trace goes (``NAME.kernels.pt.trace.json``); "" keeps none.
    """

    def __init__(self, device: str, trace_dir: str = "", name: str = "cell") -> None:
        self.device, self.trace_dir, self.name = device, trace_dir, name
        self._prof = None

    def start(self) -> None:
        """Start profiling (a profiler already running in this process raises RuntimeError)."""
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device == "cuda" else [])
        self._prof = profile(activities=activities)
        self._prof.start()

    def step(self, run: Callable[[], Any]) -> Any:
        """``run()`` (one engine step) inside a step mark."""
        from torch.profiler import record_function

        with record_function(MARK):
            return run()

    def stop(self) -> tuple[KernelTable, tuple[str, ...]]:
        """Stop; the table (steps numbered from 0) and the trace file kept (none unless ``trace_dir``); its garbage collected."""
        prof, self._prof = self._prof, None
        prof.stop()
        files: tuple[str, ...] = ()
        if self.trace_dir:
            os.makedirs(self.trace_dir, exist_ok=True)
            path = os.path.join(self.trace_dir, f"{self.name}.kernels.pt.trace.json")
            prof.export_chrome_trace(path)
            files = (path,)
        table = table_from_events(prof.events(), self.device)
        del prof
        # The profiler's event tree is full of reference cycles (parents and children): collect them now,
        # outside every window, rather than leave them to a collection inside the next cell's steps.
        gc.collect()
        return table, files

    def abandon(self) -> None:
        """Stop without reading anything (the cell ended early)."""
        prof, self._prof = self._prof, None
        if prof is not None:
            prof.stop()
