"""A profiler trace filed into steps: the kernel table, and how many device activities were filed or not.

The one reader of the kernel pass: the live pass (``inproc.engines.torchprof``) exports its
trace and reads it here, and ``inproc kernels`` reads a saved one the same way.

**Steps.** A step is a host range named by the mark (inproc's own ``inproc step``, or a glob
such as ``ProfilerStep#*``), numbered 0.. by start. A mark nested in, or overlapping, an
earlier one is not another step. The device-side copy of a mark (``gpu_user_annotation``:
a span over the step's kernels) is never a row.

**CUDA** (a trace with device activities: ``kernel``, ``gpu_memcpy``, ``gpu_memset``). Each
activity belongs to the step whose mark holds the host call that launched it: the runtime or
driver call (``cuda_runtime``, ``cuda_driver``: ``cudaLaunchKernel``, ``cudaLaunchKernelExC``,
``cudaMemcpyAsync``, ``cudaGraphLaunch``, ``cuLaunchKernel``, …) with the same correlation id,
whenever the activity itself ran (after the mark closed, under async scheduling or a graph
replay). Only runtime and driver calls are joined: a CPU operator's id is another counter that
can take the same values. An activity whose launcher lies outside every mark, or is not in the
trace, is *unfiled*: counted, never guessed. A row's time is the activity's device duration.

**CPU** (no device activity). A row is an operator's (``cpu_op``) self time: its span less the
spans of the nearest operators inside it on its thread, looking through annotations between
them, filed under the mark holding its start. Events nest as in torch's own event tree: a child
lies wholly inside its parent on the same thread, and an operator that is its parent's only child
under the same name (a dispatcher calling itself again) is one call. The rows of a step add up to
the time its threads spent inside operators; the Python between operators is in no row.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Iterable, Sequence

import numpy as np

from inproc.kernels.chrome import TraceEvent
from inproc.kernels.table import KernelTable

MARK = "inproc step"
#: The device activities a row can be, and the host calls that launch them (Chrome trace categories).
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver"})
#: Host ranges a mark can be: annotations (``record_function``), operators, Python frames (``with_stack``).
MARK_CATS = frozenset({"user_annotation", "cpu_op", "python_function"})
OPERATOR = "cpu_op"
#: Host events that nest on a thread (what an operator's children can be).
NESTING_CATS = frozenset({"cpu_op", "user_annotation", "python_function"})


@dataclass(frozen=True)
class FiledTrace:
    """A trace filed into steps: the table, each step's host span, and the device activities filed or not."""

    table: KernelTable  # steps numbered 0.. in mark order
    mark: str
    step_ns: np.ndarray  # int64: each step mark's host span (start to end), in step order
    filed: int = 0  # device activities filed to a step (0 on a CPU trace)
    unfiled_outside: int = 0  # launched outside every step mark
    unfiled_no_launcher: int = 0  # their launching call is not in the trace
    unfiled_ns: int = 0  # the unfiled activities' device time

    @property
    def steps(self) -> int:
        return int(self.step_ns.size)

    @property
    def unfiled(self) -> int:
        return self.unfiled_outside + self.unfiled_no_launcher

    def per_step_activities(self) -> np.ndarray:
        """Device activities (launches) filed to each step, in step order."""
        out = np.zeros(self.steps, np.int64)
        np.add.at(out, self.table.step, self.table.calls)
        return out

    def unfiled_text(self) -> str:
        """:func:`unfiled_words` of this trace, with why each was not filed ("" when all were)."""
        why = [f"{n} {w}" for n, w in ((self.unfiled_outside, "launched outside every step mark"),
                                       (self.unfiled_no_launcher, "whose launching call the trace lacks")) if n]
        return unfiled_words(self.filed, self.unfiled, self.unfiled_ns, "; ".join(why))


def unfiled_words(filed: int | None, unfiled: int | None, unfiled_ns: int | None, why: str = "") -> str:
    """"3 of 232 device activities not filed to a step (…; 0.41 ms of device time)"; "" when none (or not counted)."""
    if not unfiled:
        return ""
    ms = f"{(unfiled_ns or 0) / 1e6:.3g} ms of device time"
    return (f"{unfiled} of {(filed or 0) + unfiled} device activities not filed to a step "
            f"({why + '; ' if why else ''}{ms})")


def matches(name: str, mark: str) -> bool:
    """A host range is a step mark: its name is ``mark``, or matches it as a glob (``ProfilerStep#*``)."""
    return name == mark or fnmatchcase(name, mark)


def step_marks(events: Iterable[TraceEvent], mark: str) -> list[TraceEvent]:
    """The marks, by start; a mark starting before the previous one ended (nested, overlapping) is dropped."""
    out: list[TraceEvent] = []
    for e in sorted((e for e in events if e.cat in MARK_CATS and matches(e.name, mark)),
                    key=lambda e: (e.start_ns, -e.dur_ns)):
        if not out or e.start_ns >= out[-1].end_ns:
            out.append(e)
    return out


def _step_of(starts: Sequence[int], ends: Sequence[int], t_ns: int) -> int:
    """The index of the mark holding ``t_ns``, -1 outside every mark."""
    i = bisect_right(starts, t_ns) - 1
    return i if i >= 0 and t_ns < ends[i] else -1


def _device_rows(events: Sequence[TraceEvent], starts, ends):
    launchers = {e.correlation: e.start_ns for e in events if e.cat in LAUNCH_CATS and e.correlation > 0}
    rows: dict[tuple[int, str], list[int]] = {}
    filed = outside = missing = lost_ns = 0
    for e in events:
        if e.cat not in DEVICE_CATS:
            continue
        t = launchers.get(e.correlation) if e.correlation > 0 else None
        step = -1 if t is None else _step_of(starts, ends, t)
        if step < 0:
            missing, outside = missing + (t is None), outside + (t is not None)
            lost_ns += e.dur_ns
            continue
        filed += 1
        r = rows.setdefault((step, e.name), [0, 0])
        r[0] += 1
        r[1] += e.dur_ns
    return rows, filed, outside, missing, lost_ns


class _Node:
    __slots__ = ("event", "children")

    def __init__(self, event: TraceEvent | None) -> None:
        self.event, self.children = event, []


def _thread_tree(evs: list[TraceEvent]) -> _Node:
    """One thread's events as torch nests them: a child lies wholly inside its parent (sorted by start, longest
    first); then, as torch's own event list does, an event that is its parent's only child and has its name is
    merged into it (a dispatcher calling the same operator again is one call)."""
    root, stack = _Node(None), []
    for e in sorted(evs, key=lambda e: (e.start_ns, -e.end_ns)):
        while stack and (e.start_ns >= stack[-1].event.end_ns or e.end_ns > stack[-1].event.end_ns):
            stack.pop()
        node = _Node(e)
        (stack[-1] if stack else root).children.append(node)
        stack.append(node)
    todo = [root]
    while todo:
        n = todo.pop()
        while n.event is not None and len(n.children) == 1 and n.children[0].event.name == n.event.name:
            n.children = n.children[0].children
        todo.extend(n.children)
    return root


def _operator_rows(events: Sequence[TraceEvent], starts, ends):
    """Each operator's self time under the mark holding its start (the module's CPU rule)."""
    by_thread: dict[tuple, list[TraceEvent]] = {}
    for e in events:
        if e.cat in NESTING_CATS:
            by_thread.setdefault(e.thread, []).append(e)
    rows: dict[tuple[int, str], list[int]] = {}
    for evs in by_thread.values():
        todo = list(_thread_tree(evs).children)
        while todo:
            n = todo.pop()
            todo.extend(n.children)
            if n.event.cat != OPERATOR:
                continue
            own, inner = n.event.dur_ns, list(n.children)
            while inner:  # the nearest operators inside, looking through annotations
                c = inner.pop()
                if c.event.cat == OPERATOR:
                    own -= c.event.dur_ns
                else:
                    inner.extend(c.children)
            step = _step_of(starts, ends, n.event.start_ns)
            if step >= 0:
                r = rows.setdefault((step, n.event.name), [0, 0])
                r[0] += 1
                r[1] += own
    return rows


def file_events(events: Sequence[TraceEvent], mark: str = MARK, device: str | None = None) -> FiledTrace:
    """The trace's events filed into the steps ``mark`` names (the module's rule); ``device`` None: read from
    the trace (CUDA where it holds a device activity)."""
    marks = step_marks(events, mark)
    starts, ends = [m.start_ns for m in marks], [m.end_ns for m in marks]
    step_ns = np.array([m.dur_ns for m in marks], np.int64)
    if device is None:
        device = "cuda" if any(e.cat in DEVICE_CATS for e in events) else "cpu"
    if device == "cuda":
        rows, filed, outside, missing, lost = _device_rows(events, starts, ends)
        table = KernelTable.of_rows({k: (c, ns) for k, (c, ns) in rows.items()}, "cuda")
        return FiledTrace(table, mark, step_ns, filed, outside, missing, lost)
    rows = _operator_rows(events, starts, ends)
    return FiledTrace(KernelTable.of_rows({k: (c, ns) for k, (c, ns) in rows.items()}, "cpu"), mark, step_ns)
