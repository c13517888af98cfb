"""A simulator of nights whose truth is known: GPU-like step records, seeded, written by inproc's own writer.

Each night is one run of a matrix of ``cells`` decode cells. A cell's steps are made from
the ground up: every request gets one token per step, a step's time is its cell's GPU-like
base time (``STEP_MS_RANGE``, spread over the cells) times the night's level for the cell
times a per-step jitter; the step's host part (scheduler and output processing) is a share
of it, the rest is the forward. The night's level for a cell is log-normal with
``night_noise`` standard deviation, of which the share ``shared`` of the variance is common
to every cell of that night (a warm machine, a clock) and the rest the cell's own.

A :class:`Plant` slows chosen cells on chosen nights by a known factor, in the forward or
in the host part, so the step anatomy carries the signature that history's diagnosis
reads. The records go through inproc's derivation (``inproc.record.derive``: figures,
statuses) and its writers (``write_summary`` by default, as a nightly store keeps them,
or ``write_results``), so what is judged is exactly what a run would have written.
"""
from __future__ import annotations

import dataclasses
import math
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from inproc.compare.samples import SubWindowing
from inproc.measure.steps import StepTrace, on_ns_grid_array
from inproc.measure.trace import CellTrace, RequestTrace
from inproc.plan.matrix import CellPlan
from inproc.record import derive
from inproc.record.io import load_results, write_results
from inproc.record.schema import RunRecord
from inproc.record.summary import write_summary

TEMPLATE = Path(__file__).resolve().parent.parent / "fixtures" / "compare" / "run-1.json"
STEP_MS_RANGE = (3.6, 48.0)  # the published matrices' decode steps (docs/reference-matrices.md), C = 1 at 8K to C = 128 at long contexts
HOST_SHARE = 0.12  # of a step's time, in the scheduler and output processing
CONTEXTS = (8192, 32768, 131072)
CONCURRENCY = (1, 8, 32, 128)


@dataclass(frozen=True)
class Plant:
    """A known change: the steps of ``cells`` on ``nights`` take ``size`` longer (0.2: 20 %), in ``part``."""

    size: float
    nights: tuple[int, ...]
    cells: tuple[int, ...]
    part: str = "forward"  # or "host"

    def factor(self, night: int, cell: int) -> float:
        return 1 + self.size if night in self.nights and cell in self.cells else 1.0


@dataclass(frozen=True)
class NightSettings:
    """What is simulated; every field is a setting of the benchmark."""

    cells: int = 12
    nights: int = 14
    night_noise: float = 0.02  # log standard deviation of a cell's level from night to night
    shared: float = 0.5  # share of that variance common to all cells of a night
    step_jitter: float = 0.03  # log standard deviation of one step's time about its night's level
    window_s: float = 1.0
    plants: tuple[Plant, ...] = ()
    seed: int = 0

    def cell_shapes(self) -> list[tuple[int, int]]:
        grid = [(ctx, c) for ctx in CONTEXTS for c in CONCURRENCY]
        if self.cells > len(grid):
            raise ValueError(f"at most {len(grid)} cells")
        return grid[: self.cells]


def _base_ms(settings: NightSettings) -> np.ndarray:
    lo, hi = STEP_MS_RANGE
    return np.geomspace(lo, hi, settings.cells)


def _cell_trace(rng: np.random.Generator, concurrency: int, step_s: float, host_share: float, forward_k: float,
                host_k: float, s: NightSettings) -> CellTrace:
    """One cell: a prefill step that gives every request its first token, then decode steps past the window."""
    host, forward = step_s * host_share * host_k, step_s * (1 - host_share) * forward_k
    n = int(math.ceil(s.window_s / (host + forward))) + 4
    prefill = 8 * (host + forward)
    jitter = np.exp(rng.normal(0.0, s.step_jitter, n + 1))
    host_t, fwd_t = np.r_[host, np.full(n, host)] * jitter, np.r_[prefill, np.full(n, forward)] * jitter
    dur = host_t + fwd_t
    gaps = np.full(n + 1, 2e-5)  # the driver's time between steps
    start = np.cumsum(np.r_[0.0, (dur + gaps)[:-1]])
    end = on_ns_grid_array(start + dur)
    start = on_ns_grid_array(start)
    steps = StepTrace.of(t_start_s=start, t_end_s=end, schedule_s=host_t * 0.6, update_s=host_t * 0.4,
                         num_running=np.full(n + 1, concurrency), num_waiting=np.zeros(n + 1),
                         num_scheduled_tokens=np.r_[concurrency * 64, np.full(n, concurrency)],
                         num_preempted=np.zeros(n + 1), num_prefill_reqs=np.r_[concurrency, np.zeros(n)],
                         num_prefill_tokens=np.r_[concurrency * 64, np.zeros(n)],
                         num_decode_reqs=np.r_[0, np.full(n, concurrency)], num_decode_tokens=np.r_[0, np.full(n, concurrency)])
    requests = []
    for r in range(concurrency):
        ids = rng.integers(0, 32000, n + 1)
        requests.append(RequestTrace(f"r{r}", 64, 100_000, 0.0, True, array("i", range(n + 1)),
                                     array("i", [1] * (n + 1)), array("i", ids.tolist())))
    return CellTrace(steps, requests, float(end[0]), s.window_s, "first token of every request")


def simulate(s: NightSettings, template: RunRecord | None = None) -> list[RunRecord]:
    """The nights, oldest first: records derived by inproc from the simulated steps."""
    rec = template or load_results(TEMPLATE)
    rng = np.random.default_rng(s.seed)
    shapes, base = s.cell_shapes(), _base_ms(s) / 1000
    settings = dataclasses.replace(rec.plan.settings, cells=tuple(shapes), window_s=s.window_s)
    plan = dataclasses.replace(rec.plan, settings=settings)
    out = []
    for night in range(s.nights):
        shared = rng.normal(0.0, s.night_noise * math.sqrt(s.shared))
        own = rng.normal(0.0, s.night_noise * math.sqrt(1 - s.shared), s.cells)
        decode = []
        for k, (ctx, c) in enumerate(shapes):
            level = math.exp(shared + own[k])
            fwd = host = 1.0
            for p in s.plants:
                extra = p.factor(night, k) - 1
                if p.part == "host":
                    host *= 1 + extra / HOST_SHARE
                else:
                    fwd *= 1 + extra / (1 - HOST_SHARE)
            trace = _cell_trace(rng, c, base[k] * level, HOST_SHARE, fwd, host, s)
            cell = CellPlan(ctx, c, 100_000, None)
            decode.append(derive.decode_entry(cell, "shared", f"simulated night {night}", trace, None, rec.capacity,
                                              rec.plan.loops, anatomy=True))
        created = f"2026-11-{1 + night // 24:02d}T{night % 24:02d}:00:00"
        out.append(dataclasses.replace(rec, created=created, plan=plan, decode=tuple(decode), prefill=(),
                                       command=f"simulated night {night} seed {s.seed}"))
    return out


def write_nights(records: Sequence[RunRecord], folder: Path, summaries: bool = True) -> list[Path]:
    """Each night written by inproc's writer: a history summary (default) or a results file."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, rec in enumerate(records):
        if summaries:
            path = folder / f"night-{i + 1:02d}.summary.json"
            write_summary(path, rec, f"night-{i + 1:02d}.json", SubWindowing())
        else:
            path = folder / f"night-{i + 1:02d}.json"
            write_results(path, rec)
        paths.append(path)
    return paths
