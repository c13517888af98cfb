"""Reading, stage 2 (``inproc.record.document``): a schema 9-10 cell file's tables
(``inproc.record.tables``) back as the raw records' JSON trees, their arrays as numpy arrays:
what ``CellTrace.from_dict`` and ``TelemetryTrace.from_dict`` read."""
from __future__ import annotations

from typing import Any

import numpy as np

from inproc.record.tables import Table, numbered


def cell_tree(meta: dict[str, Any], tables: dict[str, Table]) -> dict[str, Any]:
    """The raw tree of a cell file (``created``, ``entry``, ``trace`` or ``samples``, ``telemetry``) from its
    JSON values and its tables."""
    traces = trace_dicts(tables, meta["traces"])
    out = {"created": meta["created"], "entry": meta["entry"],
           "telemetry": telemetry_dict(tables, meta["telemetry"]) if meta["telemetry"] else None}
    if meta["kind"] == "samples":
        return {**out, "samples": traces}
    return {**out, "trace": traces[0] if traces else None}


def trace_dicts(tables: dict[str, Table], scalars: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One trace tree per entry of ``scalars`` (a prefill entry's samples are told apart by ``sample``)."""
    steps, requests = numbered(tables.get("steps", {})), tables.get("requests", {})
    per_request = _request_tokens(tables, len(_first(requests)))
    out = []
    for i, values in enumerate(scalars):
        step_rows = _rows(steps, i)
        request_rows = np.flatnonzero(_rows_mask(requests, i))
        out.append({**values, "steps": {k: v[step_rows] for k, v in steps.items() if k != "sample"},
                    "requests": [_request(requests, int(r), per_request[int(r)]) for r in request_rows]})
    if "kernels" in tables and len(out) == 1:
        out[0]["kernels"] = tables["kernels"]  # a decode cell's kernel pass (CellTrace.kernels)
    return out


def _first(table: Table) -> Any:
    return next(iter(table.values()), [])


def _rows_mask(table: Table, sample: int) -> np.ndarray:
    n = len(_first(table))
    return np.asarray(table["sample"]) == sample if "sample" in table else np.ones(n, bool)


def _rows(table: Table, sample: int) -> np.ndarray | slice:
    return np.flatnonzero(_rows_mask(table, sample)) if "sample" in table else slice(None)


def _request(requests: Table, row: int, tokens: dict[str, np.ndarray]) -> dict[str, Any]:
    d = {k: _item(v[row]) for k, v in requests.items() if k != "sample"}
    return {**d, **tokens}


def _item(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _request_tokens(tables: dict[str, Table], n: int) -> list[dict[str, np.ndarray]]:
    """Each request's ``token_ids``, and its arrivals: the ``arrivals`` table's where written, else the
    runs of equal ``step`` among its tokens."""
    tokens = tables.get("tokens") or {"request": np.zeros(0, np.int32), "step": np.zeros(0, np.int32),
                                      "id": np.zeros(0, np.int32)}
    ids = _split(tokens["request"], np.asarray(tokens["id"], np.int32), n)
    arrivals = tables.get("arrivals")
    if arrivals is not None:
        steps = _split(arrivals["request"], np.asarray(arrivals["step"], np.int32), n)
        counts = _split(arrivals["request"], np.asarray(arrivals["count"], np.int32), n)
    else:
        steps, counts = [], []
        for s in _split(tokens["request"], np.asarray(tokens["step"], np.int32), n):
            starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if s.size else np.zeros(0, np.int64)
            steps.append(s[starts])
            counts.append(np.diff(np.r_[starts, s.size]).astype(np.int32))
    return [{"token_steps": steps[k], "token_counts": counts[k], "token_ids": ids[k]} for k in range(n)]


def _split(request: np.ndarray, values: np.ndarray, n: int) -> list[np.ndarray]:
    """``values`` cut into one array per request (rows are ordered by request)."""
    ends = np.cumsum(np.bincount(np.asarray(request, np.int64), minlength=n))[:n] if n else np.zeros(0, np.int64)
    return np.split(values, ends[:-1]) if n else []


def telemetry_dict(tables: dict[str, Table], meta: dict[str, Any]) -> dict[str, Any]:
    """The telemetry trace's tree (``TelemetryTrace.from_dict``)."""
    out = {k: v for k, v in meta.items() if k not in ("gpus", "host")}
    at = 0
    gpus = []
    for g in meta["gpus"]:
        n = g["samples"]
        series = _series(tables["gpu_samples"], slice(at, at + n), g)
        gpus.append({**{k: v for k, v in g.items() if k not in ("columns", "samples", "unsupported", "read_errors")},
                     "series": series})
        at += n
    host = meta.get("host")
    out["gpus"] = gpus
    out["host"] = None if host is None else _series(tables["host_samples"], slice(None), host)
    return out


def _series(table: Table, rows: slice, meta: dict[str, Any]) -> dict[str, Any]:
    return {"t_s": table["t_s"][rows], "values": {c: table[c][rows] for c in meta["columns"]},
            "ok": {c: table[f"{c}_ok"][rows] for c in meta["columns"] if f"{c}_ok" in table},
            "unsupported": meta["unsupported"], "read_errors": meta["read_errors"]}
