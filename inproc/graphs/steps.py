"""The decode steps a results file holds, as the padding arithmetic reads them.

Per cell: the window steps (``inproc.measure.metrics.window``) of every Valid or Requests
queued cell, with each step's token count, its recorded padded count and graph mode, and
its ``Engine.step()`` time. A step's token count is the engine's own: ``num_unpadded_tokens``
of its ``CUDAGraphStat`` (the tokens the forward ran before padding) where recorded, else
the scheduler's ``num_scheduled_tokens`` of the batch the step formed (the same number in
vLLM, where both are recorded).

Only decode steps are kept: a window step whose batch held a prefill chunk (a refill
request's prompt) is left out and counted, since its size follows the prompt, not the decode
batch. Where the batch's shape was recorded it says so (``num_prefill_reqs``); where not (the
window runs without the shape probe), a step is decode when its tokens are at most
running requests × (1 + k), the most a decode batch schedules with k speculative tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inproc import types as st
from inproc.errors import UsageError
from inproc.measure.metrics import window
from inproc.record.schema import DecodeEntry, RunRecord

#: Cells whose window steps are read: those that held C requests in flight or say why not.
READ_STATUSES = (st.VALID, st.QUEUED)


@dataclass(frozen=True, eq=False)
class CellSteps:
    """One cell's decode steps (see the module docstring); arrays are one value per step."""

    label: str  # "256x4", or "FILE: 256x4" when several files are read
    context: int
    concurrency: int
    status: str
    counts: np.ndarray  # tokens the step's forward ran before padding
    times_s: np.ndarray  # Engine.step() end − start
    recorded_padded: np.ndarray  # the engine's padded tokens (-1: not recorded)
    graph_modes: np.ndarray  # index into GRAPH_MODES (-1: not recorded)
    left_out: int  # window steps that held a prefill chunk
    source: str  # where the counts came from
    window_s: float  # Σ Engine.step() time of every window step (the left-out ones too)

    @property
    def steps(self) -> int:
        return int(self.counts.size)


@dataclass(frozen=True)
class RunSteps:
    """The decode steps of one results file, with what its engine captured."""

    path: str
    cells: tuple[CellSteps, ...]
    damaged: tuple[str, ...]  # one line per cell that could not be read
    captured: tuple[int, ...] | None  # the engine's capture sizes; (): none; None: not recorded
    speculative_tokens: int  # k (0: no speculative decoding)
    speculative_method: str | None


def captured_sizes(rec: RunRecord) -> tuple[int, ...] | None:
    """The capture sizes the run's engine resolved (``EngineSettings.graph_capture_sizes``).

    Files written before that field kept vLLM's list among the shown settings, under vLLM's
    own name, with its resolved mode beside it; that is read instead.
    """
    s = rec.engine.settings
    if s.graph_capture_sizes is not None:
        return s.graph_capture_sizes
    shown = s.shown.get("cudagraph_capture_sizes")
    if shown is None:
        return None
    if str(s.shown.get("cudagraph_mode", "")).rsplit(".", 1)[-1] == "NONE":
        return ()
    return tuple(sorted(int(x) for x in shown))


def _cell(e: DecodeEntry, label: str, k: int) -> CellSteps | str:
    """The cell's decode steps, or why it cannot be read."""
    trace = e.trace
    if trace is None:
        return f"{label}: {e.status} but its steps are not in the file (a compact record)"
    w = window(trace)
    if w is None:
        return f"{label}: its window holds no step"
    s, rows = trace.steps, slice(w.first_step, w.last_step + 1)
    unpadded, scheduled = s.num_unpadded_tokens[rows], s.num_scheduled_tokens[rows]
    counts = np.where(unpadded >= 0, unpadded, scheduled)
    prefill, running = s.num_prefill_reqs[rows], s.num_running[rows]
    decode = np.where(prefill >= 0, prefill == 0, counts <= running * (1 + k)) & (counts > 0)
    source = "CUDAGraphStat" if (unpadded[decode] >= 0).all() else "scheduled tokens"
    times = s.t_end_s[rows] - s.t_start_s[rows]
    return CellSteps(label, e.context, e.concurrency, e.status, counts[decode].astype(np.int64), times[decode],
                     s.num_padded_tokens[rows][decode], s.graph_mode[rows][decode], int((~decode).sum()), source,
                     float(np.nan_to_num(times, nan=0.0).sum()))


def read_run(rec: RunRecord, path: str, prefix: str = "") -> RunSteps:
    """Every readable Valid or Requests queued cell of ``rec``; one line per cell that is not."""
    k = int(rec.engine.settings.num_speculative_tokens or 0)
    cells, damaged = [], [f"{prefix}{u.entry}: {u.reason}" for u in rec.unreadable]
    for e in rec.decode:
        if e.status not in READ_STATUSES:
            continue
        got = _cell(e, f"{prefix}{e.key}", k)
        (damaged if isinstance(got, str) else cells).append(got)
    if not any(c.steps for c in cells):
        statuses = ", ".join(sorted({e.status for e in rec.decode})) or "no decode cell"
        unread = f"; {len(damaged)} not read, first {damaged[0]}" if damaged else ""
        raise UsageError(f"{path} has no decode steps to read: no Valid or Requests queued cell with a window "
                         f"({statuses}{unread}). Give a results file of 'inproc run' or 'inproc cell' with a measured "
                         "decode cell.")
    return RunSteps(path, tuple(cells), tuple(damaged), captured_sizes(rec), k, rec.engine.settings.speculative_method)


def label_prefix(paths: list[str]) -> list[str]:
    """Cell labels' prefixes: none for one file, the file's name for several."""
    if len(paths) < 2:
        return [""] * len(paths)
    names = [Path(p).name for p in paths]
    return [f"{(n if names.count(n) == 1 else p)}: " for n, p in zip(names, paths)]
