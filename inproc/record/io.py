"""The results file: a small JSON manifest and one cell file per entry, each written once.

``RESULTS.json`` (the path given to ``--out``, ``report``, ``compare``...) is the manifest:
the plan, the engine, the machine, and every entry's status, verdict and figures (cached,
with the version of the definitions that derived them). Each entry's raw records (its
trace, samples and telemetry samples) are in ``RESULTS.cells/``: its cell file
``ENTRY.json.gz`` and a Parquet file per table (``inproc.record.cells``), written once when
the entry is measured. The manifest is written when its header changes (the first save, a
note, the run's end; :class:`ResultsWriter`), not after every entry: until then the newest
entries are only in their cell files, and the loader adds them. Every write is temp file +
fsync + ``os.replace``: a reader never sees half a file, and an interrupted run loses at
most the entry in progress.

The schema's history and the migration of older files (versions 1–6 held every raw
record inline in one JSON, 7–8 one ``.npz`` per entry) are in :mod:`inproc.record.migrate`;
a newer file than this inproc reads is refused with the fix.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from inproc.errors import UsageError
from inproc.record.atomic import write_atomic
from inproc.record.claim import Claim, clear_cells
from inproc.record.cells import cell_name, is_cell_file, read_skeleton, write_cell
from inproc.record.contain import CellFolder
from inproc.record.damage import require_raw, unlisted_row
from inproc.record.fromjson import from_json
from inproc.record.migrate import SCHEMA_VERSION, migrate
from inproc.record.schema import DecodeEntry, PrefillEntry, RunRecord
from inproc.record.tojson import cell_row, entry_id, header_json, plan_json, to_json

__all__ = ["SCHEMA_VERSION", "ResultsWriter", "cells_dir", "load_results", "plan_json", "read_finished",
           "record_from_json", "to_json", "write_manifest", "write_results", "write_text_atomic"]

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

    The writer claims the path (``inproc.record.claim``: one writer at a time, a killed one's
    temp files removed) until :meth:`close`. A new file (``new``; by default when ``record`` is
    None or holds no entry) is begun at the first save: a manifest without entries replaces the
    old one, the old cell folder is moved aside and deleted, and only then are cells written.
    A crash at any point leaves the old file whole, or the new run's manifest (whose loader
    passes over cells of the old run: another ``created``), resumable.
    """

    def __init__(self, path: str | os.PathLike, record: RunRecord | None = None, new: bool | None = None) -> None:
        self.path, self.cells = Path(path), cells_dir(path)
        self.bytes_written = 0
        self._header: dict[str, Any] | None = None
        self.claim = Claim(self.path, self.cells)
        # A resumed record's entries were read from their cell files: not written again (a schema
        # 7-8 file's .npz stay as they are). One held without a cell file, a resumed schema-6
        # file's, is written at the first save.
        held = (record.prefill + record.decode) if record is not None else ()
        self._new = not held if new is None else new
        self.files = {entry_id(e): name for e in held
                      for name in (cell_name(entry_id(e)), f"{entry_id(e)}.npz") if (self.cells / name).is_file()}

    def save(self, record: RunRecord, manifest: bool = False) -> None:
        """Write the cell files of entries not written yet; the manifest too when its header
        changed, the run finished, or ``manifest`` asks."""
        if self._new:
            self._begin(record)
        for e in record.prefill + record.decode:
            name = entry_id(e)
            if name not in self.files:
                self.bytes_written += _write_entry(self.cells / cell_name(name), record.created, e)
                self.files[name] = cell_name(name)
        header = header_json(record)
        if manifest or record.finished or header != self._header:
            self._write_manifest(record)

    def _begin(self, record: RunRecord) -> None:
        """A new file's first step: a manifest of the header alone in place, the old cell folder removed."""
        self._write_manifest(dataclasses.replace(record, prefill=(), decode=(), finished=False))
        clear_cells(self.cells)
        self._new = False

    def _write_manifest(self, record: RunRecord) -> None:
        text = json.dumps({**to_json(record, self.files), "cells": self.cells.name}, separators=(",", ":"))
        self.bytes_written += write_text_atomic(self.path, text)
        self._header = header_json(record)

    def close(self) -> None:
        """Give up the claim on the path (another run may write it then)."""
        self.claim.release()


def _write_entry(path: Path, created: str, e: PrefillEntry | DecodeEntry) -> int:
    """An entry's cell file: what its row holds beyond the manifest's (``tojson.cell_row``) and its raw records."""
    telemetry = e.telemetry.trace if e.telemetry is not None else None
    if isinstance(e, PrefillEntry):
        return write_cell(path, created, cell_row(e), e.samples, True, telemetry)
    return write_cell(path, created, cell_row(e), [e.trace] if e.trace else [], False, telemetry)


def write_results(path: str | os.PathLike, record: RunRecord) -> int:
    """Write a whole, new results file (manifest and every cell file, replacing any at ``path``); the bytes written.

    An entry read from an unreadable cell file has no raw records to write: one line."""
    require_raw(record, "writing a results file")
    writer = ResultsWriter(path)
    try:
        writer.save(record, manifest=True)
    finally:
        writer.close()
    return writer.bytes_written


def write_manifest(path: str | os.PathLike, record: RunRecord) -> int:
    """Rewrite the manifest of a results file ``record`` was read from (its header changed, e.g. a
    note added); no cell file is written again (an older file's entries held inline get theirs,
    once). The bytes written."""
    require_raw(record, "rewriting a results file")
    writer = ResultsWriter(path, record, new=False)
    try:
        writer.save(record, manifest=True)
    finally:
        writer.close()
    return writer.bytes_written


# -- loading -------------------------------------------------------------------------
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
        cells = CellFolder(folder, str(data["cells"])) if folder is not None and data.get("cells") else None
        data = migrate(data)
        if cells is not None and not data.get("finished"):
            data = with_unlisted_cells(data, cells)
        return dataclasses.replace(from_json(data, cells, rederive), schema_version=version)
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # right version, wrong content
        raise UsageError(f"{where}: not a results file ({type(e).__name__}: {e}). {RESULTS_HINT}") from None


def with_unlisted_cells(data: dict[str, Any], cells: CellFolder) -> dict[str, Any]:
    """An unfinished run's manifest plus the entries of its cell files written after the manifest
    was (same ``created``: cell files of an earlier run at this path are passed over). A measured
    entry's cell file has no status or headline figures (``tojson.cell_row``): its row loads
    derived again from its raw records.

    One that cannot be read, named as an entry of the plan, is added as a bare row: it loads
    as an Error entry naming it (``inproc.record.damage``), since it may be this run's; so is one
    that is a symlink leading out of the folder (never opened: ``inproc.record.contain``)."""
    listed = {d.get("cell_file") for d in data.get("prefill", []) + data.get("decode", [])}
    # Ordered by when each was written: the link's own time for a symlink, whose target is not looked at.
    found = sorted((n for n in cells.names() if is_cell_file(Path(n)) and n not in listed),
                   key=lambda n: (cells.path / n).lstat().st_mtime_ns)
    rows = {"prefill": list(data.get("prefill", [])), "decode": list(data.get("decode", []))}
    for name in found:
        try:
            skeleton = read_skeleton(cells, name)
        except UsageError:
            row = unlisted_row(name, data.get("plan") or {})
        else:
            ours = skeleton.get("created") == data.get("created") and "entry" in skeleton
            row = {**skeleton["entry"], "cell_file": name} if ours else None
        if row is not None:
            rows["decode" if "concurrency" in row else "prefill"].append(row)
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
