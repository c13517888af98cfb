"""Loading a results file: its three reading stages, called once each, in order.

  1. ``inproc.record.files``     bytes to documents: the manifest and its cell files parsed, the version
                                 read (a cell file that cannot be read is a damage value);
  2. ``inproc.record.document``  the document at today's schema: migrated step by step
                                 (``inproc.record.migrate``), each row with its raw records or its damage;
  3. ``inproc.record.fromjson``  the typed ``RunRecord``: figures cached under today's definitions, or
                                 derived again from the raw records (``inproc.record.derive``); a damaged
                                 row an Error entry.

Each stage takes the last one's output as a stream (Arrow's readers are the model): the rows
are made one at a time as stage 3 takes them, so one cell's tables are let go before the next
cell is read. No stage calls back into an earlier one, and nothing here writes
(``inproc.record.write`` does).
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from inproc.errors import UsageError
from inproc.record.contain import CellFolder
from inproc.record.damage import Damage, require_raw, words
from inproc.record.document import cell_tree, current
from inproc.record.files import check_version, read_cell as read_cell_file, read_files, read_json
from inproc.record.fromjson import from_json
from inproc.record.layout import BASELINE_KIND, RESULTS_HINT
from inproc.record.migrate import SCHEMA_VERSION
from inproc.record.schema import RunRecord


def load_results(path: str | os.PathLike, rederive: bool = False) -> RunRecord:
    """Read a results file, migrating an older schema; figures are derived again from the raw
    records when the file's definitions are not today's, or when ``rederive`` asks.

    A missing, foreign or newer file is a one-line :class:`UsageError`. An entry whose cell file
    cannot be read is an Error entry (``inproc.record.damage``); with ``rederive``, which needs
    every raw record, it is that cell file's one-line error.
    """
    p = Path(path)
    data = read_json(p, "results file", f"No results file at {str(path)!r}. {RESULTS_HINT}")
    rec = record_from_json(data, str(p), p.parent, rederive)
    if rederive:
        require_raw(rec, "deriving the figures again")
    return rec


def read_finished(path: str | os.PathLike) -> bool:
    """Whether a results file says its run finished, read from its manifest alone (no cell file)."""
    p = Path(path)
    data = read_json(p, "results file", f"No results file at {str(path)!r}. {RESULTS_HINT}")
    check_version(data, "schema_version", SCHEMA_VERSION, "results file", RESULTS_HINT, str(p))
    return bool(data.get("finished", False))


def record_from_json(data: Any, where: str, folder: Path | None = None, rederive: bool = False) -> RunRecord:
    """A results JSON object of any known version (read from ``where``) as a record; one-line errors.

    ``folder``: where the file lies (its cell folder is named in it, and every cell file is read
    from that folder alone: ``inproc.record.contain``); None for a run held inline (a baseline's).
    """
    if isinstance(data, dict) and data.get("kind") == BASELINE_KIND:
        raise UsageError(f"{where}: a baseline of several runs, not one results file. "
                         "Give it to 'inproc compare', or give one of the runs it was made from.")
    version = check_version(data, "schema_version", SCHEMA_VERSION, "results file", RESULTS_HINT, where)
    try:
        # A stream: stage 3 takes each row as stage 2 makes it from the cell file stage 1 has just read.
        files = read_files(data, folder)  # 1: bytes to documents
        document = current(files)  # 2: the document at today's schema
        return dataclasses.replace(from_json(document, rederive), schema_version=version)  # 3: the typed record
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # right version, wrong content
        raise UsageError(f"{where}: not a results file ({type(e).__name__}: {e}). {RESULTS_HINT}") from None


def read_cell(folder: CellFolder, name: str) -> dict[str, Any]:
    """The raw tree of cell file ``name`` (``created``, ``entry``, ``trace`` or ``samples``, ``telemetry``),
    its arrays as numpy arrays (stages 1 and 2 for one file); a missing, damaged or outside file (the
    cell file or a table beside it) is a one-line :class:`UsageError` naming it and what is wrong."""
    tree = cell_tree(read_cell_file(folder, name))
    if isinstance(tree, Damage):
        raise UsageError(words(tree))
    return tree


def read_skeleton(folder: CellFolder, name: str) -> dict[str, Any]:
    """A cell file's JSON values alone (``created``, ``entry``; no table is read); a missing, damaged or
    outside file is a one-line :class:`UsageError`."""
    cell = read_cell_file(folder, name, tables=False)
    if cell.meta is None:
        raise UsageError(words(cell.damage))
    return cell.meta
