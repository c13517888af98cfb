"""Writing one entry's raw records as Parquet tables, once (schema 9 on; 10: a measured entry's cell row shortened; layout and columns:
``docs/results-format.md``; the reader: ``inproc.record.files``; older ``.npz`` cell files: ``inproc.record.migrate_cells``).

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
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from inproc.measure.trace import CellTrace
from inproc.record.atomic import write_atomic
from inproc.record.layout import CELL_SCHEMA, cell_name, is_cell_file, table_name
from inproc.record.tables import Table, arrow_table, stored_tables
from inproc.telemetry.trace import TelemetryTrace

__all__ = ["arrow_table", "cell_name", "is_cell_file", "stored_tables", "table_name", "table_path", "write_cell"]

_KEY_SCHEMA, _KEY_TABLE = b"inproc.schema_version", b"inproc.table"
_WRITE = dict(compression="zstd", compression_level=9, write_statistics=False, store_schema=False, write_page_checksum=True)


def table_path(cell: Path, table: str) -> Path:
    """The file holding table ``table`` of the cell whose cell file is ``cell`` (for writing it)."""
    return cell.with_name(table_name(cell.name, table))


def write_cell(path: Path, created: str, entry: dict[str, Any], traces: Sequence[CellTrace], samples: bool,
               telemetry: TelemetryTrace | None) -> int:
    """Write an entry's tables (its traces, stacked as samples when ``samples``, and telemetry), the
    cell file last; the bytes written. Each file: temp file, fsync, ``os.replace``."""
    stored, meta = stored_tables(traces, samples, telemetry)
    written = sum(_write(table_path(path, name), name, t) for name, t in stored.items())
    cell = json.dumps({"schema_version": CELL_SCHEMA, "created": created, "entry": entry, **meta}, separators=(",", ":"))
    return written + write_atomic(path, lambda f: f.write(gzip.compress(cell.encode(), 9, mtime=0)))


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
