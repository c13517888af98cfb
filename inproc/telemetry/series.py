"""Raw samples of one source (one GPU, or the host): the buffer the sampler fills, the
frozen record it hands back, and the probes that fill it.

The buffer's arrays are allocated before a cell starts and grown by doubling, so
taking a sample writes into existing arrays; the only per-sample objects are the small
ones the NVML / psutil calls return and the tuples a probe hands them back in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from inproc.codec import decode_array, encode_array
from inproc.telemetry.nvml_ids import PERMANENT_ERRORS

# A probe that fails this many samples in a row is switched off for the rest of the
# session (1 s at 10 Hz): a query the driver stopped answering should not cost an
# exception per sample forever. Isolated failures only leave a gap in that column.
MAX_CONSECUTIVE_FAILURES = 10


@dataclass(frozen=True, eq=False)
class SampleSeries:
    """Samples of one source over one cell, exactly as read.

    ``t_s`` is ``time.perf_counter()`` when the sample started. ``values[c]`` holds
    column ``c`` (float columns are NaN where the read failed or was skipped);
    ``ok[c]`` is True where that read succeeded. ``unsupported`` names the columns that
    were never read (or were switched off) and why; ``read_errors`` counts failed reads.
    """

    t_s: np.ndarray
    values: Mapping[str, np.ndarray]
    ok: Mapping[str, np.ndarray]
    unsupported: Mapping[str, str]
    read_errors: Mapping[str, str]

    @property
    def num_samples(self) -> int:
        return int(self.t_s.size)

    def valid(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Timestamps and values of the samples where ``column`` was read successfully."""
        if column not in self.values:
            return np.empty(0), np.empty(0)
        mask = self.ok[column]
        return self.t_s[mask], self.values[column][mask]

    def absent_reason(self, column: str) -> str | None:
        """Why ``column`` has no valid sample at all, or None when it has some."""
        if column in self.values and bool(self.ok[column].any()):
            return None
        if column in self.unsupported:
            return self.unsupported[column]
        if column in self.read_errors:
            return f"every read failed ({self.read_errors[column]})"
        if column not in self.values:
            return f"not sampled ({column} is not a column of this source)"
        return "no samples"

    def to_dict(self) -> dict[str, object]:
        """JSON form; ``ok`` is written only for columns where some read failed."""
        return {
            "t_s": encode_array(self.t_s),
            "values": {k: encode_array(v) for k, v in self.values.items()},
            "ok": {k: encode_array(m) for k, m in self.ok.items() if not bool(m.all())},
            "unsupported": dict(self.unsupported),
            "read_errors": dict(self.read_errors),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SampleSeries":
        t_s = decode_array(data["t_s"])
        values = {k: decode_array(v) for k, v in data["values"].items()}
        written_ok = {k: decode_array(v) for k, v in data.get("ok", {}).items()}
        ok = {k: written_ok.get(k, np.ones(t_s.size, dtype=bool)) for k in values}
        unsupported = dict(data.get("unsupported", {}))
        read_errors = dict(data.get("read_errors", {}))
        return cls(t_s, values, ok, unsupported, read_errors)


class Probe:
    """One query whose answer fills one or more columns, with its failure bookkeeping."""

    __slots__ = ("name", "columns", "read", "every", "off_reason", "failures", "run", "first_error")

    def __init__(
        self,
        name: str,
        columns: tuple[str, ...],
        read: Callable[[], Sequence[float | int]],
        every: int = 1,
    ) -> None:
        self.name = name
        self.columns = columns
        self.read = read  # returns one value per column, in order
        self.every = every  # read on every ``every``-th sample of a cell
        self.off_reason: str | None = None
        self.failures = 0  # in the current cell
        self.run = 0  # consecutive failures
        self.first_error = ""

    def new_cell(self) -> None:
        """Start counting failures afresh (a switched-off probe stays off)."""
        self.failures = 0
        self.first_error = ""

    def fail(self, exc: BaseException) -> None:
        """Count a failed read; switch the probe off if the failure is permanent."""
        message = f"{type(exc).__name__}: {exc}"
        self.failures += 1
        self.run += 1
        if not self.first_error:
            self.first_error = message
        if is_permanent(exc):
            self.off_reason = f"unsupported: {message}"
        elif self.run >= MAX_CONSECUTIVE_FAILURES:
            self.off_reason = f"switched off after {self.run} failed reads in a row; last: {message}"


def is_permanent(exc: BaseException) -> bool:
    """True for errors that will repeat on every call: NVML 'not supported' and kin."""
    if isinstance(exc, (AttributeError, NotImplementedError)):
        return True
    return getattr(exc, "value", None) in PERMANENT_ERRORS


class SeriesBuffer:
    """Preallocated columns for one source; ``take`` fills one row from the probes."""

    def __init__(self, columns: Sequence[tuple[str, str]], capacity: int) -> None:
        self._dtypes = {name: np.dtype(dtype) for name, dtype in columns}
        self._capacity = max(16, int(capacity))
        self.n = 0
        self._allocate(self._capacity)

    def _allocate(self, capacity: int) -> None:
        self.t_s = np.full(capacity, np.nan)
        self.values = {name: _blank(dt, capacity) for name, dt in self._dtypes.items()}
        self.ok = {name: np.zeros(capacity, dtype=bool) for name in self._dtypes}

    def reset(self) -> None:
        """Forget the previous cell's samples (arrays are reused, blanked)."""
        self.n = 0
        self.t_s.fill(np.nan)
        for name, arr in self.values.items():
            arr.fill(np.nan if arr.dtype.kind == "f" else 0)
            self.ok[name].fill(False)

    def _grow(self) -> None:
        old_t, old_v, old_ok, n = self.t_s, self.values, self.ok, self.n
        self._capacity *= 2
        self._allocate(self._capacity)
        self.t_s[:n] = old_t[:n]
        for name in self.values:
            self.values[name][:n] = old_v[name][:n]
            self.ok[name][:n] = old_ok[name][:n]

    def take(self, t_s: float, probes: Sequence[Probe], closing: bool = False,
             answers: Mapping[str, Sequence[float | int]] | None = None) -> None:
        """Append one sample taken at ``t_s``: run each live probe, store what it answers. ``answers``
        (probe name -> its values) stands for probes just read otherwise, which are not read again.

        A probe with ``every > 1`` runs on rows 0, every, 2*every... and on the closing
        row (and on any row taken with ``closing``: a window edge's), so that its counters bracket any
        window inside the cell.
        """
        if self.n == self._capacity:
            self._grow()
        i = self.n
        self.n += 1
        self.t_s[i] = t_s
        for probe in probes:
            if probe.off_reason is not None or (i % probe.every and not closing):
                continue
            try:
                answer = answers[probe.name] if answers and probe.name in answers else probe.read()
            except Exception as exc:  # NVML / psutil errors of any kind: a gap, not a crash
                probe.fail(exc)
                continue
            probe.run = 0
            for name, value in zip(probe.columns, answer):
                self.values[name][i] = value
                self.ok[name][i] = True

    def snapshot(self, probes: Sequence[Probe]) -> SampleSeries:
        """Copy out this cell's samples as a frozen record."""
        n = self.n
        unsupported, read_errors = probe_problems(probes)
        return SampleSeries(
            t_s=self.t_s[:n].copy(),
            values={k: v[:n].copy() for k, v in self.values.items()},
            ok={k: m[:n].copy() for k, m in self.ok.items()},
            unsupported=unsupported,
            read_errors=read_errors,
        )


def probe_problems(probes: Sequence[Probe]) -> tuple[dict[str, str], dict[str, str]]:
    """Per column, why its probe is off (``unsupported``) and its failed reads in words (``read_errors``)."""
    unsupported: dict[str, str] = {}
    read_errors: dict[str, str] = {}
    for probe in probes:
        for name in probe.columns:
            if probe.off_reason is not None:
                unsupported[name] = probe.off_reason
            if probe.failures:
                read_errors[name] = f"{probe.failures} failed reads; first: {probe.first_error}"
    return unsupported, read_errors


def _blank(dtype: np.dtype, capacity: int) -> np.ndarray:
    return np.full(capacity, np.nan, dtype=dtype) if dtype.kind == "f" else np.zeros(capacity, dtype=dtype)


class ProbeSource:
    """A source sampled by probes into its own buffer (a GPU, the host)."""

    probes: list[Probe]
    buffer: SeriesBuffer

    def take(self, t_s: float, closing: bool = False,
             answers: Mapping[str, Sequence[float | int]] | None = None) -> None:
        """Append one sample stamped ``t_s`` (``closing``: the cell's last or a window edge's, read everything;
        ``answers``: values of probes just read otherwise, by probe name)."""
        self.buffer.take(t_s, self.probes, closing, answers)

    def new_cell(self) -> None:
        """Start a cell: blank the buffer, and reset probes that count per cell."""
        self.buffer.reset()
        for probe in self.probes:
            probe.new_cell()
