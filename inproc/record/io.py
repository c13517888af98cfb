"""The results file: a small JSON manifest and one cell file per entry, each written once.

``RESULTS.json`` (the path given to ``--out``, ``report``, ``compare``...) is the manifest:
the plan, the engine, the machine, and every entry's status, verdict and figures (cached,
with the version of the definitions that derived them). Each entry's raw records (its
trace, samples and telemetry samples) are in ``RESULTS.cells/ENTRY.npz``
(``inproc.record.cells``), written once when the entry is measured. The manifest is
written when its header changes (the first save, a note, the run's end; :class:`ResultsWriter`),
not after every entry: until then the newest entries are only in their cell files, and the
loader adds them. Every write is temp file + fsync + ``os.replace``: a reader never sees half
a file, and an interrupted run loses at most the entry in progress.

The schema's history and the migration of older files (versions 1–6 held every raw
record inline in one JSON) are in :mod:`inproc.record.migrate`; a newer file than this
inproc reads is refused with the fix.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from inproc.errors import UsageError
from inproc.record.atomic import write_atomic
from inproc.record.cells import read_skeleton, write_cell
from inproc.record.fromjson import from_json
from inproc.record.migrate import SCHEMA_VERSION, migrate
from inproc.record.schema import RunRecord
from inproc.record.tojson import entry_id, entry_json, header_json, plan_json, raw_json, to_json

__all__ = ["SCHEMA_VERSION", "ResultsWriter", "cells_dir", "load_results", "plan_json", "read_finished",
           "record_from_json", "to_json", "write_results", "write_text_atomic"]

RESULTS_HINT = "Give the JSON written by 'inproc run --out'."
BASELINE_KIND = "inproc-baseline"  # the "kind" of a baseline file (inproc.record.baseline), which holds runs


# -- writing -------------------------------------------------------------------------
def write_text_atomic(path: str | os.PathLike, text: str) -> int:
    """``text`` as UTF-8, written atomically (:func:`inproc.record.atomic.write_atomic`); the bytes written."""
    return write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def cells_dir(path: str | os.PathLike) -> Path:
    """The folder beside a results file that holds its cell files: ``RESULTS.json`` -> ``RESULTS.cells``."""
    p = Path(path)
    return p.with_name(p.name.removesuffix(".json") + ".cells")


class ResultsWriter:
    """Saves one results file as a run goes: each entry once, to its own cell file (its whole row
    and its raw records), and the manifest when its header changes (first save, a note, the end).

    Between two manifest writes the newest entries are only in their cell files; the loader
    adds every cell file of this run (same ``created``) that the manifest does not list yet,
    so nothing measured is lost however the run ends. ``bytes_written`` counts every byte
    written, so a benchmark can set it against the record's size on disk.
    """

    def __init__(self, path: str | os.PathLike, record: RunRecord | None = None) -> None:
        self.path, self.cells = Path(path), cells_dir(path)
        self.bytes_written = 0
        self._header: dict[str, Any] | None = None
        # A resumed record's entries were read from their cell files: not written again. (One
        # held without a cell file, a resumed schema-6 file's, is written at the first save.)
        held = (record.prefill + record.decode) if record is not None else ()
        self.files = {entry_id(e): f"{entry_id(e)}.npz" for e in held if (self.cells / f"{entry_id(e)}.npz").is_file()}

    def save(self, record: RunRecord, manifest: bool = False) -> None:
        """Write the cell files of entries not written yet; the manifest too when its header
        changed, the run finished, or ``manifest`` asks."""
        for e in record.prefill + record.decode:
            name = entry_id(e)
            if name not in self.files:
                cell = {"created": record.created, "entry": entry_json(e), **raw_json(e)}
                self.bytes_written += write_cell(self.cells / f"{name}.npz", cell)
                self.files[name] = f"{name}.npz"
        header = header_json(record)
        if manifest or record.finished or header != self._header:
            text = json.dumps({**to_json(record, self.files), "cells": self.cells.name}, separators=(",", ":"))
            self.bytes_written += write_text_atomic(self.path, text)
            self._header = header


def write_results(path: str | os.PathLike, record: RunRecord) -> int:
    """Write a whole results file (manifest and every cell file); the bytes written."""
    writer = ResultsWriter(path)
    writer.save(record, manifest=True)
    return writer.bytes_written


# -- loading -------------------------------------------------------------------------
def load_results(path: str | os.PathLike, rederive: bool = False) -> RunRecord:
    """Read a results file, migrating an older schema; figures are derived again from the raw
    records when the file's definitions are not today's, or when ``rederive`` asks.

    A missing, foreign or newer file is a one-line :class:`UsageError`.
    """
    p = Path(path)
    data = read_json(p, "results file", f"No results file at {str(path)!r}. {RESULTS_HINT}")
    return record_from_json(data, str(p), p.parent, rederive)


def read_finished(path: str | os.PathLike) -> bool:
    """Whether a results file says its run finished, read from its manifest alone (no cell file)."""
    p = Path(path)
    data = read_json(p, "results file", f"No results file at {str(path)!r}. {RESULTS_HINT}")
    check_version(data, "schema_version", SCHEMA_VERSION, "results file", RESULTS_HINT, str(p))
    return bool(data.get("finished", False))


def record_from_json(data: Any, where: str, folder: Path | None = None, rederive: bool = False) -> RunRecord:
    """A results JSON object of any known version (read from ``where``) as a record; one-line errors.

    ``folder``: where the file lies (its cell folder is named in it); None for a run held
    inline (a baseline's).
    """
    if isinstance(data, dict) and data.get("kind") == BASELINE_KIND:
        raise UsageError(f"{where}: a baseline of several runs, not one results file. "
                         "Give it to 'inproc compare', or give one of the runs it was made from.")
    version = check_version(data, "schema_version", SCHEMA_VERSION, "results file", RESULTS_HINT, where)
    try:
        cells = folder / str(data.get("cells") or "") if folder is not None and data.get("cells") else None
        data = migrate(data)
        if cells is not None and not data.get("finished"):
            data = with_unlisted_cells(data, cells)
        return dataclasses.replace(from_json(data, cells, rederive), schema_version=version)
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # right version, wrong content
        raise UsageError(f"{where}: not a results file ({type(e).__name__}: {e}). {RESULTS_HINT}") from None


def with_unlisted_cells(data: dict[str, Any], cells: Path) -> dict[str, Any]:
    """An unfinished run's manifest plus the entries of its cell files written after the manifest
    was (same ``created``: cell files of an earlier run at this path are passed over)."""
    listed = {d.get("cell_file") for d in data.get("prefill", []) + data.get("decode", [])}
    found = sorted((p for p in cells.glob("*.npz") if p.name not in listed), key=lambda p: p.stat().st_mtime_ns)
    rows = {"prefill": list(data.get("prefill", [])), "decode": list(data.get("decode", []))}
    for p in found:
        skeleton = read_skeleton(p)
        if skeleton.get("created") == data.get("created") and "entry" in skeleton:
            rows["prefill" if p.name.startswith("prefill-") else "decode"].append({**skeleton["entry"], "cell_file": p.name})
    return {**data, **rows}


def read_json(p: Path, what: str, missing: str) -> Any:
    """The JSON in ``p``; a missing file (``missing``: the message), a cut-short one or bad JSON is a
    one-line :class:`UsageError` naming ``p``."""
    if not p.is_file():
        raise UsageError(missing)
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        text = e.doc.rstrip()
        if text.startswith(("{", "[")) and not text.endswith(("}", "]")):  # cut short: its object never closes
            raise UsageError(f"{p}: truncated {what} (its JSON stops after {len(text)} characters, unclosed: an "
                             "interrupted copy?). Copy it again from where it was written.") from None
        raise UsageError(f"{p}: not a {what} (invalid JSON: {e}).") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{p}: not a {what} (invalid JSON: {e}).") from None


def check_version(data: Any, key: str, current: int, what: str, hint: str, where: str) -> int:
    """The format version an inproc JSON object holds in ``key``.

    An object without the key, or with a version newer than ``current``, is a one-line
    :class:`UsageError` naming ``where``, with the fix.
    """
    if not isinstance(data, dict) or key not in data:
        raise UsageError(f"{where}: not an inproc {what} (no {key}). {hint}".rstrip())
    version = data[key]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"{where}: {key} {version!r} is not an inproc schema. {hint}".rstrip())
    if version > current:
        raise UsageError(f"{where}: {key} {version} is newer than this inproc reads (up to {current}). "
                         "Upgrade inproc to read it (pip install -U inproc, or pull the checkout that wrote it).")
    return version
