"""One entry's raw records as named columns: the tables of a cell file (``inproc.record.cells``).

``steps``        one row per engine step, every column of the step record
                 (``inproc.measure.steps.StepTrace``) under its own name;
``requests``     one row per request, every field of ``RequestTrace`` but its token arrays;
``tokens``       one row per output token: ``request`` (its row in ``requests``), ``step``
                 (the step that returned it) and ``id``;
``gpu_samples``  telemetry, one row per GPU and sample (``gpu``: its NVML index);
``host_samples`` telemetry, one row per host sample.

A prefill entry's samples are stacked, each row with its ``sample``. The tables are built
from the records' fields, so a field added to a record is a column with no change here.
A column in seconds (``*_s``) whose every known value is a whole number of nanoseconds
(the step times are measured on that grid: ``inproc.measure.steps.on_ns_grid``) is stored
as integer nanoseconds (``*_ns``, null where unknown); any other stays float64, so every
value reads back exactly, -0.0 included. The rest of the records (a trace's window, its
counters; telemetry's sources) are JSON values: :attr:`Tables.meta`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from inproc.measure.steps import COLUMN_LABELS
from inproc.measure.trace import CellTrace, RequestTrace
from inproc.telemetry.series import SampleSeries
from inproc.telemetry.trace import TRACE_FORMAT, TelemetryTrace

#: A table: column name -> values (numpy for numbers; a list where values are strings or may be None).
Table = dict[str, Any]
_TOKEN_FIELDS = ("token_steps", "token_counts", "token_ids")
#: Largest time kept as integer nanoseconds: below 2**53 ns a count and its float64 seconds map one to one.
_NS_LIMIT_S = 2.0**53 / 1e9


@dataclass
class Tables:
    """An entry's tables and its JSON values; ``meta["ns"][table]`` names the columns stored in nanoseconds."""

    tables: dict[str, Table]
    meta: dict[str, Any]


def whole_ns(seconds: np.ndarray) -> np.ma.MaskedArray | None:
    """``seconds`` as int64 nanoseconds (NaN masked), or None when a value is not exactly a whole
    number of nanoseconds (off the grid, infinite, too large, or -0.0, which integers cannot hold)."""
    known = ~np.isnan(seconds)
    s = seconds[known]
    if not np.all(np.abs(s) < _NS_LIMIT_S) or np.any(np.signbit(s) & (s == 0)):
        return None
    ns = np.round(s * 1e9)
    if not np.array_equal(ns / 1e9, s):
        return None
    out = np.zeros(seconds.size, np.int64)
    out[known] = ns.astype(np.int64)
    return np.ma.MaskedArray(out, mask=~known)


def seconds_of(ns: np.ndarray, null: np.ndarray) -> np.ndarray:
    """The float64 seconds :func:`whole_ns` came from (NaN where ``null``)."""
    out = ns.astype(np.int64) / 1e9
    out[null] = np.nan
    return out


def in_ns(table: Table) -> tuple[Table, list[str]]:
    """``table`` with each seconds column on the nanosecond grid as ``*_ns``; the names it converted (without ``_s``)."""
    out, done = {}, []
    for name, col in table.items():
        ns = None
        if name.endswith("_s") and isinstance(col, np.ndarray) and col.dtype == np.float64 \
                and f"{name[:-2]}_ns" not in table:
            ns = whole_ns(col)
        if ns is None:
            out[name] = col
        else:
            out[f"{name[:-2]}_ns"] = ns
            done.append(name[:-2])
    return out, done


# -- traces --------------------------------------------------------------------------
def trace_tables(traces: Sequence[CellTrace], stacked: bool) -> tuple[dict[str, Table], list[dict[str, Any]]]:
    """The steps, requests and tokens tables of ``traces`` (with a ``sample`` column when ``stacked``)
    and each trace's JSON values."""
    steps, requests, tokens = [], [], []
    first_request, unknown = 0, _never_known(traces)
    for i, t in enumerate(traces):
        tag = {"sample": np.full(len(t.steps), i, np.int32)} if stacked else {}
        steps.append({**tag, **{k: v for k, v in t.steps.columns.items() if k not in unknown}})
        requests.append(_requests(t.requests, i if stacked else None))
        tokens.append(_tokens(t.requests, first_request))
        first_request += len(t.requests)
    tables = {"steps": named(_stack(steps)), "requests": _stack(requests), "tokens": _stack(tokens)}
    return tables, [t.scalars_dict() for t in traces]


def named(steps: Table) -> Table:
    """``steps`` with each column of ``COLUMN_LABELS`` as its names (None where unknown)."""
    out = dict(steps)
    for name, labels in COLUMN_LABELS.items():
        col = out.get(name)
        if col is not None and np.all((col >= -1) & (col < len(labels))):
            out[name] = [labels[i] if i >= 0 else None for i in col.tolist()]
    return out


def numbered(steps: Table) -> Table:
    """The inverse of :func:`named`."""
    out = dict(steps)
    for name, labels in COLUMN_LABELS.items():
        if isinstance(out.get(name), list):
            out[name] = np.array([labels.index(v) if v is not None else -1 for v in out[name]], np.int64)
    return out


def _never_known(traces: Sequence[CellTrace]) -> set[str]:
    """Step columns unknown in every row of every trace (-1 / NaN: the engine never reported them),
    left out of the file: a reader fills a missing column with unknowns (``StepTrace.of``)."""
    columns = [t.steps.columns for t in traces if len(t.steps)]
    names = set(columns[0]) if columns else set()  # no row: nothing is known to be unknown
    return {n for n in names if n != "output_of"  # a missing output_of reads as synchronous steps, not unknown
            and all(np.all(c[n] == -1) if c[n].dtype.kind in "iu" else np.all(np.isnan(c[n])) for c in columns)}


def _requests(requests: Sequence[RequestTrace], sample: int | None) -> Table:
    names = [f.name for f in dataclasses.fields(RequestTrace) if f.name not in _TOKEN_FIELDS]
    table: Table = {} if sample is None else {"sample": np.full(len(requests), sample, np.int32)}
    for name in names:
        values = [getattr(r, name) for r in requests]
        floats = all(isinstance(v, float) for v in values)
        table[name] = np.array(values, np.float64) if floats else values
    return table


def _tokens(requests: Sequence[RequestTrace], first: int) -> Table:
    """One row per token; each request's arrivals are the runs of equal ``step`` (checked: :func:`_arrivals_kept`)."""
    ids = [np.asarray(r.token_ids, np.int32) for r in requests]
    steps = [np.repeat(np.asarray(r.token_steps, np.int32), np.asarray(r.token_counts, np.int64))
             if _arrivals_kept(r) else np.full(len(r.token_ids), -1, np.int32) for r in requests]
    index = [np.full(a.size, first + k, np.int32) for k, a in enumerate(ids)]
    return {"request": _cat(index, np.int32), "step": _cat(steps, np.int32), "id": _cat(ids, np.int32)}


def _arrivals_kept(r: RequestTrace) -> bool:
    """Whether the request's token rows give back its arrivals: one per step, each of a token or more."""
    steps, counts = np.asarray(r.token_steps, np.int64), np.asarray(r.token_counts, np.int64)
    return bool(np.all(counts > 0) and np.all(np.diff(steps) != 0) and counts.sum() == len(r.token_ids))


def arrivals_table(traces: Sequence[CellTrace]) -> Table | None:
    """The arrivals (request, step, count) when some request's token rows cannot give them back; else None."""
    if all(_arrivals_kept(r) for t in traces for r in t.requests):
        return None
    rows = [r for t in traces for r in t.requests]
    index = [np.full(len(r.token_steps), k, np.int32) for k, r in enumerate(rows)]
    return {"request": _cat(index, np.int32), "step": _cat([np.asarray(r.token_steps) for r in rows], np.int32),
            "count": _cat([np.asarray(r.token_counts) for r in rows], np.int32)}


def _cat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _stack(parts: list[Table]) -> Table:
    """Tables with the same columns, one after the other."""
    if not parts:
        return {}
    out: Table = {}
    for name in parts[0]:
        cols = [p[name] for p in parts]
        out[name] = np.concatenate(cols) if isinstance(cols[0], np.ndarray) else [v for c in cols for v in c]
    return out


# -- telemetry -----------------------------------------------------------------------
def telemetry_tables(tel: TelemetryTrace) -> tuple[dict[str, Table], dict[str, Any]]:
    """``gpu_samples`` (every GPU's samples, stacked) and ``host_samples``, and the trace's JSON values."""
    records = ("gpus", "host", "energy_reads", "marks")
    meta = {f.name: getattr(tel, f.name) for f in dataclasses.fields(TelemetryTrace) if f.name not in records}
    meta["format"] = TRACE_FORMAT
    meta["energy_reads"] = [dataclasses.asdict(r) for r in tel.energy_reads]
    meta["marks"] = [dataclasses.asdict(m) for m in tel.marks]
    meta["gpus"] = [{**{f.name: getattr(g, f.name) for f in dataclasses.fields(g) if f.name != "series"},
                     **_series_meta(g.series)} for g in tel.gpus]
    meta["host"] = None if tel.host is None else _series_meta(tel.host)
    tables = {}
    if tel.gpus:
        tables["gpu_samples"] = _stack_series([(g.index, g.series) for g in tel.gpus])
    if tel.host is not None:
        tables["host_samples"] = _stack_series([(None, tel.host)])
    return tables, meta


def _series_meta(s: SampleSeries) -> dict[str, Any]:
    return {"columns": list(s.values), "samples": s.num_samples, "unsupported": dict(s.unsupported), "read_errors": dict(s.read_errors)}


def _stack_series(sources: list[tuple[int | None, SampleSeries]]) -> Table:
    """Samples of one or more sources, with ``gpu`` when they are GPUs, and ``COLUMN_ok`` where some read failed."""
    names = list(dict.fromkeys(name for _, s in sources for name in s.values))
    failed = [n for n in names if any(n in s.ok and not s.ok[n].all() for _, s in sources)]
    parts = []
    for index, s in sources:
        n = s.num_samples
        part: Table = {} if index is None else {"gpu": np.full(n, index, np.int32)}
        part["t_s"] = s.t_s
        for name in names:
            part[name] = s.values[name] if name in s.values else np.zeros(n, _dtype_of(sources, name))
        part.update({f"{name}_ok": s.ok.get(name, np.ones(n, bool)) for name in failed})
        parts.append(part)
    return _stack(parts)


def _dtype_of(sources: list[tuple[int | None, SampleSeries]], name: str) -> np.dtype:
    return next(s.values[name].dtype for _, s in sources if name in s.values)


# -- a cell file's tables -------------------------------------------------------------
def stored_tables(traces: Sequence[CellTrace], samples: bool, telemetry: TelemetryTrace | None
                  ) -> tuple[dict[str, Table], dict[str, Any]]:
    """An entry's tables as a cell file stores them (times in nanoseconds), and its JSON values."""
    tables, scalars = trace_tables(traces, samples) if traces else ({}, [])  # measured nothing: no table
    arrivals = arrivals_table(traces)
    if arrivals is not None:
        tables["arrivals"] = arrivals
    if not samples and traces and traces[0].kernels is not None:
        tables["kernels"] = traces[0].kernels.columns()  # the kernel pass's table (a decode cell's)
    tel_meta = None
    if telemetry is not None:
        tel_tables, tel_meta = telemetry_tables(telemetry)
        tables.update(tel_tables)
    stored, ns = {}, {}
    for name, table in tables.items():
        stored[name], ns[name] = in_ns(table)
    return stored, {"kind": "samples" if samples else "trace", "traces": scalars, "telemetry": tel_meta,
                    "tables": list(stored), "ns": ns}


def arrow_table(table: Table) -> pa.Table:
    """A table as Arrow: a column without nulls declared so (its pages then carry no definition levels)."""
    columns = {k: pa.array(v) if len(v) or not isinstance(v, list) else pa.array(v, pa.string()) for k, v in table.items()}
    return pa.table(columns, schema=pa.schema([pa.field(k, c.type, nullable=c.null_count > 0) for k, c in columns.items()]))
