"""One entry's raw records as Parquet tables, written once (schema 9 on; 10: a measured entry's cell row shortened; layout and columns:
``docs/results-format.md``; older ``.npz`` cell files: ``inproc.record.migrate_cells``).

An entry ``decode-256x4`` is its cell file ``RESULTS.cells/decode-256x4.json.gz`` (the one
the manifest names) and, beside it, one Parquet file per table of ``inproc.record.tables``
(``decode-256x4.steps.parquet``, ``decode-256x4.tokens.parquet``, ...). Each table is an
ordinary Parquet file (zstd; integers DELTA_BINARY_PACKED, floats BYTE_STREAM_SPLIT,
strings by dictionary; CRC32 on every page) that pandas, polars, DuckDB or pyarrow read
with no inproc installed, and says ``inproc.schema_version`` and ``inproc.table`` in its
key-value metadata. The cell file is gzip-compressed JSON (``zcat`` reads it): the schema
version, the run's ``created`` (the loader matches a cell file to its run by it), the entry's
JSON row, the records' JSON values (a trace's window and counters, telemetry's sources) and
the tables written. It is written last, so a cell whose cell file exists is whole.
"""
from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from inproc.errors import UsageError
from inproc.measure.trace import CellTrace
from inproc.record import fromtables, migrate_cells
from inproc.record.atomic import write_atomic
from inproc.record.contain import CellFolder
from inproc.record.tables import Table, arrivals_table, in_ns, seconds_of, telemetry_tables, trace_tables
from inproc.telemetry.trace import TelemetryTrace

#: The cell file's version: the results file's schema that introduced it.
CELL_SCHEMA = 10
CELL_SUFFIX, TABLE_SUFFIX = ".json.gz", ".parquet"
_KEY_SCHEMA, _KEY_TABLE = b"inproc.schema_version", b"inproc.table"
_WRITE = dict(compression="zstd", compression_level=9, write_statistics=False, store_schema=False, write_page_checksum=True)


def cell_name(entry: str) -> str:
    """The cell file of entry ``entry`` (``decode-256x4`` -> ``decode-256x4.json.gz``)."""
    return f"{entry}{CELL_SUFFIX}"


def table_name(cell: str, table: str) -> str:
    """The file holding table ``table`` of cell file ``cell`` (``decode-256x4.json.gz`` -> ``decode-256x4.steps.parquet``)."""
    return f"{cell.removesuffix(CELL_SUFFIX)}.{table}{TABLE_SUFFIX}"


def table_path(cell: Path, table: str) -> Path:
    """The file holding table ``table`` of the cell whose cell file is ``cell`` (for writing it)."""
    return cell.with_name(table_name(cell.name, table))


def is_cell_file(path: Path) -> bool:
    """A cell file of any schema (a table beside one is not)."""
    return path.name.endswith(CELL_SUFFIX) or path.suffix == ".npz"


# -- writing -------------------------------------------------------------------------
def write_cell(path: Path, created: str, entry: dict[str, Any], traces: Sequence[CellTrace], samples: bool,
               telemetry: TelemetryTrace | None) -> int:
    """Write an entry's tables (its traces, stacked as samples when ``samples``, and telemetry), the
    cell file last; the bytes written. Each file: temp file, fsync, ``os.replace``."""
    stored, meta = stored_tables(traces, samples, telemetry)
    written = sum(_write(table_path(path, name), name, t) for name, t in stored.items())
    cell = json.dumps({"schema_version": CELL_SCHEMA, "created": created, "entry": entry, **meta}, separators=(",", ":"))
    return written + write_atomic(path, lambda f: f.write(gzip.compress(cell.encode(), 9, mtime=0)))


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


def _write(path: Path, name: str, table: Table) -> int:
    arrow = arrow_table(table)
    meta = {_KEY_SCHEMA: str(CELL_SCHEMA).encode(), _KEY_TABLE: name.encode()}
    numeric = [f.name for f in arrow.schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
    encoding = {f.name: "DELTA_BINARY_PACKED" if pa.types.is_integer(f.type) else "BYTE_STREAM_SPLIT"
                for f in arrow.schema if f.name in numeric}
    others = [f.name for f in arrow.schema if f.name not in numeric]

    def write(f) -> None:
        # Without the Arrow schema stored (a kilobyte per file), metadata is added to the footer itself.
        with pq.ParquetWriter(f, arrow.schema, use_dictionary=others, column_encoding=encoding, **_WRITE) as w:
            w.write_table(arrow)
            w.add_key_value_metadata(meta)

    return write_atomic(path, write)


# -- reading -------------------------------------------------------------------------
# Every reader takes the cell folder and a name in it, never a path: each file it opens (the cell
# file, each table) comes from CellFolder.file, which refuses one outside the folder.
def read_skeleton(folder: CellFolder, name: str) -> dict[str, Any]:
    """A cell file's JSON values alone (``created``, ``entry``; no table is read); a missing, damaged or
    outside (``inproc.record.contain``) file is a one-line :class:`UsageError`."""
    path = folder.file(name)
    if path.suffix == ".npz":
        return migrate_cells.read_skeleton(path)
    return _cell_json(path)


def read_cell(folder: CellFolder, name: str) -> dict[str, Any]:
    """The raw tree of cell file ``name`` (``created``, ``entry``, ``trace`` or ``samples``, ``telemetry``),
    its arrays as numpy arrays; a missing, damaged or outside file (the cell file or a table beside
    it) is a one-line :class:`UsageError` naming it and what is wrong."""
    path = folder.file(name)
    if path.suffix == ".npz":
        return migrate_cells.read_cell(path)
    meta = _cell_json(path)
    tables = {t: _table(folder.file(table_name(name, t)), meta["ns"].get(t, [])) for t in meta["tables"]}
    traces = fromtables.trace_dicts(tables, meta["traces"])
    out = {"created": meta["created"], "entry": meta["entry"],
           "telemetry": fromtables.telemetry_dict(tables, meta["telemetry"]) if meta["telemetry"] else None}
    if meta["kind"] == "samples":
        return {**out, "samples": traces}
    return {**out, "trace": traces[0] if traces else None}


def read_tables(folder: CellFolder, name: str) -> dict[str, pa.Table]:
    """A cell's tables as Arrow tables, as stored (``inproc.open``)."""
    return {t: _read(folder.file(table_name(name, t))) for t in _cell_json(folder.file(name))["tables"]}


#: How a damaged cell file is mended: read only, never rewritten.
_FIX = "Copy the results folder again from where the run wrote it, or measure the cell again."


def _cell_json(path: Path) -> dict[str, Any]:
    """The JSON of a cell file; a missing, empty, cut-short, foreign or damaged one is a one-line error."""
    if not path.is_file():
        raise UsageError(f"{path}: missing cell file (the results file lists it). Copy the folder "
                         f"{path.parent.name}/ beside the results file too.")
    data = path.read_bytes()
    if not data:
        raise UsageError(f"{path}: empty cell file (an interrupted copy?). {_FIX}")
    if data[:2] != b"\x1f\x8b":
        raise UsageError(f"{path}: not a cell file (not gzip-compressed JSON). {_FIX}")
    try:
        return json.loads(gzip.decompress(data))
    except EOFError:  # gzip's stream stops before its end marker
        raise UsageError(f"{path}: truncated cell file (its end is missing: an interrupted copy?). {_FIX}") from None
    except (OSError, zlib.error, ValueError) as e:  # gzip's CRC or zlib's stream, or the JSON
        raise UsageError(f"{path}: damaged cell file ({type(e).__name__}: {_one_line(e)}). {_FIX}") from None


def _read(path: Path) -> pa.Table:
    """A table file, read whole with every page's checksum verified; missing or damaged: a one-line error."""
    if not path.is_file():
        raise UsageError(f"{path}: missing table file (its cell file lists it). {_FIX}")
    try:
        return pq.ParquetFile(path, page_checksum_verification=True).read()
    except (OSError, ValueError, pa.ArrowException) as e:
        raise UsageError(f"{path}: {_damage(path, e)}. {_FIX}") from None


def _table(path: Path, ns: list[str]) -> Table:
    """A stored table as :mod:`inproc.record.tables` builds them: seconds back from nanoseconds, numbers
    as numpy arrays, strings and columns with nulls as lists."""
    arrow = _read(path)
    out: Table = {}
    for name in arrow.column_names:
        col = arrow[name]
        base = name.removesuffix("_ns")
        if name.endswith("_ns") and base in ns:
            out[f"{base}_s"] = seconds_of(col.fill_null(0).to_numpy(), col.is_null().to_numpy(zero_copy_only=False))
        elif col.null_count == 0 and (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
                                      or pa.types.is_boolean(col.type)):
            out[name] = np.array(col.to_numpy())  # a writable copy, as the records held
        else:
            out[name] = col.to_pylist()
    return out


def _damage(path: Path, error: BaseException) -> str:
    """What is wrong with a table file pyarrow cannot read, from its bytes: empty, cut short, foreign or damaged."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(4)
        f.seek(max(0, size - 4))
        tail = f.read()
    if size == 0:
        return "empty table file (an interrupted copy?)"
    if head != b"PAR1":
        return "not a table file (not a Parquet file)"
    if tail != b"PAR1":  # a Parquet file ends with its footer and the magic again: a cut-short file has none
        return "truncated table file (its end is missing: an interrupted copy?)"
    return f"damaged table file (it does not read back: {_one_line(error)})"


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())
