"""Where a results file keeps its parts (the names of its cell folder, cell files and table files),
and the identities of the files that hold runs (their kinds and format versions).

Shared by the writers (``inproc.record.write``, ``inproc.record.cells``, ``inproc.record.summary``)
and the readers (``inproc.record.files``, ``inproc.record.baseline``); nothing here opens a file.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from inproc.units import cell_key

#: The cell file's version: the results file's schema that introduced it.
CELL_SCHEMA = 10
CELL_SUFFIX, TABLE_SUFFIX = ".json.gz", ".parquet"
RESULTS_HINT = "Give the JSON written by 'inproc run --out'."
BASELINE_KIND = "inproc-baseline"  # the "kind" of a baseline file (inproc.record.baseline), which holds runs
BASELINE_VERSION = 2  # its format's version (history: inproc.record.baseline)
SUMMARY_KIND = "inproc-summary"  # the "kind" of one run in compact form (inproc.record.summary)
SUMMARY_VERSION = 1  # its format's version (history: inproc.record.baseline)


def cells_dir(path: str | os.PathLike) -> Path:
    """The folder beside a results file that holds its cell files: ``RESULTS.json`` -> ``RESULTS.cells``."""
    p = Path(path)
    return p.with_name(p.name.removesuffix(".json") + ".cells")


def entry_name(context: int, concurrency: int | None = None) -> str:
    """``prefill-8192`` (no concurrency) or ``decode-8192x16``: an entry's name in the record, in ``inproc.open``
    and as its cell file's stem; the one place it is spelled (:data:`ENTRY_FILE` reads it back)."""
    return f"prefill-{context}" if concurrency is None else f"decode-{cell_key(context, concurrency)}"


#: A file named for an entry (:func:`entry_name`) with its suffixes: group 1 a prefill's context, 2 and 3 a decode's.
ENTRY_FILE = re.compile(r"(?:prefill-(\d+)|decode-(\d+)x(\d+))(?:\.[a-z0-9]+)+")


def cell_name(entry: str) -> str:
    """The cell file of entry ``entry`` (``decode-256x4`` -> ``decode-256x4.json.gz``)."""
    return f"{entry}{CELL_SUFFIX}"


def table_name(cell: str, table: str) -> str:
    """The file holding table ``table`` of cell file ``cell`` (``decode-256x4.json.gz`` -> ``decode-256x4.steps.parquet``)."""
    return f"{cell.removesuffix(CELL_SUFFIX)}.{table}{TABLE_SUFFIX}"


def is_cell_file(path: Path) -> bool:
    """A cell file of any schema (a table beside one is not)."""
    return path.name.endswith(CELL_SUFFIX) or path.suffix == ".npz"
