"""One row per engine step: when it ran, what batch it formed, what that batch's forward was.

Times are seconds on ``time.perf_counter()`` relative to the cell's start, on the clock's
nanosecond grid (:func:`on_ns_grid`: the clock counts nanoseconds; the bits below them are
float arithmetic, which no file could compress). A row holds
what its step did: the queues and the batch the scheduler formed in it (its shape,
scheduled tokens, preemptions), its host time inside the scheduler, the garbage
collector's pauses inside the step and in the gap before it (:data:`GC_INTS`), and, once
the engine reports it, that batch's forward (CUDA-graph mode, padding, FLOPs, bytes).
``output_of[i]`` is the row whose batch produced the outputs step ``i`` returned: ``i``
itself when steps are synchronous, ``i - 1`` under vLLM's async scheduling or SGLang's
overlap loop, -1 when it returned none (or the batch was formed before the cell).

Unknown values are -1 (integers) and NaN (floats): an engine that does not report a
figure, or a file written before the column existed (the GC columns of a file written
before they were recorded: "not recorded").
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Callable

import numpy as np

from inproc.codec import decode_array, encode_array
from inproc.drafts import SpecStep
from inproc.types import GRAPH_MODES, ForwardStats, StepResult

#: Float columns of the step itself, filled by StepRecorder.append in this order; the first
#: two are in every file ever written (``convert_s`` is newer: NaN in older files).
STEP_FLOATS = ("t_start_s", "t_end_s", "schedule_s", "update_s", "probe_s", "convert_s")
#: Integer columns of the step itself; the first four are in every file ever written.
STEP_INTS = ("num_running", "num_waiting", "num_scheduled_tokens", "num_preempted", "num_prefill_reqs",
             "num_prefill_tokens", "num_decode_reqs", "num_decode_tokens", "output_of",
             "kv_used_blocks", "kv_used_window_blocks",  # the KV blocks held (StepResult.kv_used_blocks)
             "gc_count", "gc_generation", "gc_ns", "gc_between_count", "gc_between_generation", "gc_between_ns")
#: The garbage collector's pauses of a step (``inproc.run.gcwatch.GcWatch``), the last of STEP_INTS:
#: collections that ran inside the step (between the two clock reads around ``Engine.step()``,
#: on any thread of this process), then those that ran in the gap before it (after the previous
#: step's end: the driver filing tokens and refilling, ``add_request``); each as the number of
#: collections, the oldest generation collected (-1: none) and their time in nanoseconds.
#: -1 in every one: not recorded (older files; ``GcWatch`` off).
GC_INTS = STEP_INTS[-6:]
#: A row's GC columns when nothing was recorded.
NO_GC = (-1,) * len(GC_INTS)
#: Speculative decoding's drafts verified in the batch a step returned, as the engine counted them
#: (vLLM's ``SpecDecodingStats`` of that step), filed under the row of the step that returned them, as
#: the cell's engine counters are read after each step: over a window the rows sum to the counters'
#: differences. Per draft position i (1-based, up to :data:`SPEC_POSITIONS`): ``spec_accepted_at_i``,
#: drafts whose first i tokens were all accepted; ``spec_drafted_at_i``, drafts with at least i
#: tokens. -1: not counted (no speculation, no per-step stats, a position past the engine's drafts).
SPEC_POSITIONS = 8
SPEC_INTS = ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens",
             *(f"spec_accepted_at_{i}" for i in range(1, SPEC_POSITIONS + 1)),
             *(f"spec_drafted_at_{i}" for i in range(1, SPEC_POSITIONS + 1)))
_NO_SPEC = (-1,) * len(SPEC_INTS)
#: Columns of a batch's forward, filed under the row of the step that formed the batch.
FORWARD_FLOATS = ("flops", "read_bytes", "write_bytes")
FORWARD_INTS = ("graph_mode", "num_unpadded_tokens", "num_padded_tokens")
#: Integer columns that index a list of names (-1: unknown); a results file stores the names.
COLUMN_LABELS = {"graph_mode": GRAPH_MODES}
FLOAT_COLUMNS = STEP_FLOATS + FORWARD_FLOATS
INT_COLUMNS = STEP_INTS + SPEC_INTS + FORWARD_INTS
_N_STEP_FLOATS, _N_STEP_INTS = len(STEP_FLOATS), len(STEP_INTS) + len(SPEC_INTS)
_NF, _NI = len(FLOAT_COLUMNS), len(INT_COLUMNS)
_NO_SHAPE = (-1, -1, -1, -1)
#: Steps held as they came before they become rows together (``StepRecorder``): the memory of a
#: few hundred results, none of it kept past the next flush.
HELD_ROWS = 256
_NO_FORWARD_F = (np.nan,) * len(FORWARD_FLOATS)  # a row's forward columns until its batch returns
_NO_FORWARD_I = (-1,) * len(FORWARD_INTS)


@dataclass(eq=False)
class StepTrace:
    """The step rows of one cell, one numpy array per column (see the module docstring)."""

    columns: dict[str, np.ndarray]

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self.__dict__["columns"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __len__(self) -> int:
        return len(self.columns["t_end_s"])

    def known(self, name: str) -> np.ndarray:
        """Where column ``name`` holds a value (not -1 / NaN)."""
        col = self.columns[name]
        return ~np.isnan(col) if col.dtype.kind == "f" else col >= 0

    def to_dict(self) -> dict:
        return {name: encode_array(col) for name, col in self.columns.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "StepTrace":
        return cls.of(**{name: decode_array(d[name]) for name in FLOAT_COLUMNS + INT_COLUMNS if name in d})

    @classmethod
    def of(cls, **given: np.ndarray) -> "StepTrace":
        """Columns not given are unknown, except ``output_of``: without it steps were synchronous."""
        unknown = set(given) - set(FLOAT_COLUMNS + INT_COLUMNS)
        if unknown:
            raise ValueError(f"unknown step columns {sorted(unknown)}")
        n = len(given["t_end_s"])
        cols = {name: np.asarray(given[name], dtype=np.float64) if name in given else np.full(n, np.nan)
                for name in FLOAT_COLUMNS}
        for name in INT_COLUMNS:
            default = np.arange(n) if name == "output_of" else np.full(n, -1)
            cols[name] = np.asarray(given.get(name, default), dtype=np.int64)
        return cls(cols)


def on_ns_grid(seconds: float) -> float:
    """``seconds`` rounded to whole nanoseconds, as a float: ``round(seconds * 1e9) / 1e9``.

    ``perf_counter`` counts nanoseconds on Linux, so a time kept in seconds holds nothing
    finer; the digits below are rounding noise of the subtraction from the cell's start.
    Times are put on this grid when measured, so the results file stores them as integer
    nanoseconds (``inproc.record.cells``) and a figure derived again from the file equals the
    one derived when measured. Idempotent; :func:`on_ns_grid_array` is the same for arrays.
    """
    return round(seconds * 1e9) / 1e9


def on_ns_grid_array(seconds: np.ndarray) -> np.ndarray:
    """:func:`on_ns_grid` for an array (NaN stays NaN); the same arithmetic, so the same values."""
    return np.round(np.asarray(seconds, dtype=np.float64) * 1e9) / 1e9


class StepRecorder:
    """Keeps a cell's steps as they come; their rows go to two flat ``array`` buffers (floats,
    integers) in bulk.

    :meth:`append` only holds the step's times and result (a list append: this runs between
    every two steps, when the driver's code is cold in the CPU's caches after the engine's
    step); every :data:`HELD_ROWS` steps, and whenever a row is read, the held steps become rows
    together. Nothing it keeps for long grows per step but the two buffers, which the garbage
    collector does not walk. A new per-step column is one name in STEP_FLOATS / STEP_INTS and
    one value in :meth:`_row`'s row, in the same position.
    """

    def __init__(self) -> None:
        self._n = 0
        self._f = array("d")
        self._i = array("q")
        self._held: list[tuple[float, float, StepResult, tuple[int, ...]]] = []

    def append(self, t_start: float, t_end: float, res: StepResult, gc: tuple[int, ...] = NO_GC) -> int:
        """Record one step (and the forward of the batch it returned); returns its index.

        ``gc``: the step's :data:`GC_INTS`, in their order (inside, then the gap before it);
        :meth:`freeze` can give them for every row at once instead."""
        held = self._held
        held.append((t_start, t_end, res, gc))
        self._n += 1
        if len(held) >= HELD_ROWS:
            self.flush()
        return self._n - 1

    def flush(self) -> None:
        """Make the held steps rows now (done every :data:`HELD_ROWS` steps, and whenever a row is read)."""
        held, self._held = self._held, []
        first = self._n - len(held)
        for k, (t_start, t_end, res, gc) in enumerate(held):
            self._row(first + k, t_start, t_end, res, gc)

    def _row(self, i: int, t_start: float, t_end: float, res: StepResult, gc: tuple[int, ...]) -> None:
        b, fw, lag = res.batch, res.forward, res.returned_lag
        shape = (b.num_prefill_reqs, b.num_prefill_tokens, b.num_decode_reqs, b.num_decode_tokens) if b else _NO_SHAPE
        source = i - lag if lag >= 0 else -1
        kv, kv_window = res.kv_used_blocks, res.kv_used_window_blocks
        own = fw is not None and lag == 0  # the step returned its own batch's forward: in its own row, as made
        self._f.extend((t_start, t_end, res.schedule_s, res.update_s, res.probe_s, res.convert_s,
                        *(_forward_floats(fw) if own else _NO_FORWARD_F)))
        self._i.extend((res.num_running, res.num_waiting, res.num_scheduled_tokens, res.num_preempted, *shape,
                        source if source >= 0 else -1, -1 if kv is None else kv,
                        -1 if kv_window is None else kv_window, *gc,
                        *(_NO_SPEC if res.spec is None else spec_row(res.spec)),
                        *(_forward_ints(fw) if own else _NO_FORWARD_I)))
        if fw is not None and not own and source >= 0:
            self._set_forward(source, fw)

    def _set_forward(self, row: int, fw: ForwardStats) -> None:
        """An earlier row's forward columns (the last of its integers and of its floats), from the step that
        returned its batch's forward."""
        f, n, base_f, base_i = self._f, self._i, row * _NF + _N_STEP_FLOATS, row * _NI + _N_STEP_INTS
        for k, v in enumerate(_forward_floats(fw)):
            f[base_f + k] = v
        for k, v in enumerate(_forward_ints(fw)):
            n[base_i + k] = v

    def __len__(self) -> int:
        return self._n

    def row(self, i: int) -> dict[str, float | int]:
        """Row ``i`` as recorded so far, by column name (times not yet on the nanosecond grid)."""
        self.flush()
        f, n = self._f[i * _NF:(i + 1) * _NF], self._i[i * _NI:(i + 1) * _NI]
        return {**dict(zip(FLOAT_COLUMNS, f)), **dict(zip(INT_COLUMNS, n))}

    def freeze(self, gc: Callable[[np.ndarray, np.ndarray], dict[str, np.ndarray]] | None = None) -> StepTrace:
        """The rows as a trace; the step's times (``STEP_FLOATS``) put on the nanosecond grid.

        ``gc``: the GC columns from the steps' start and end times (as appended, before the grid),
        instead of those appended (``inproc.run.gcwatch.GcWatch.columns``)."""
        self.flush()
        n = self._n
        f = np.frombuffer(self._f, dtype=np.float64).reshape(n, _NF)
        i = np.frombuffer(self._i, dtype=np.int64).reshape(n, _NI)
        cols = {name: f[:, k].copy() for k, name in enumerate(FLOAT_COLUMNS)}
        cols.update({name: i[:, k].copy() for k, name in enumerate(INT_COLUMNS)})
        if gc is not None:
            cols.update(gc(cols["t_start_s"], cols["t_end_s"]))
        cols.update({name: on_ns_grid_array(cols[name]) for name in STEP_FLOATS})
        return StepTrace(cols)


def spec_row(spec: SpecStep) -> tuple[int, ...]:
    """A step's :data:`SPEC_INTS` values; positions the engine did not count (or past :data:`SPEC_POSITIONS`) -1."""
    pad = lambda per_pos: (*per_pos[:SPEC_POSITIONS], *(-1,) * (SPEC_POSITIONS - len(per_pos)))  # noqa: E731
    return (spec.num_drafts, spec.num_draft_tokens, spec.num_accepted_tokens, *pad(spec.accepted_per_pos),
            *pad(spec.drafted_per_pos))


def _forward_floats(fw: ForwardStats) -> tuple[float, ...]:
    """A forward's :data:`FORWARD_FLOATS` values, NaN where not reported."""
    return _float(fw.flops), _float(fw.read_bytes), _float(fw.write_bytes)


def _forward_ints(fw: ForwardStats) -> tuple[int, ...]:
    """A forward's :data:`FORWARD_INTS` values (its graph mode by index), -1 where not reported."""
    mode = GRAPH_MODES.index(fw.graph_mode) if fw.graph_mode in GRAPH_MODES else -1
    return mode, _int(fw.num_unpadded_tokens), _int(fw.num_padded_tokens)


def _int(v: int | None) -> int:
    return -1 if v is None else int(v)


def _float(v: float | None) -> float:
    return np.nan if v is None else float(v)
