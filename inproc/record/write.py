"""Writing a results file: a small JSON manifest and one cell file per entry, each written once.

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

Nothing here reads a results file: the loader is ``inproc.record.load`` (which imports no
writer), and the schema's history is in :mod:`inproc.record.migrate`.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from inproc.record.atomic import write_atomic
from inproc.record.cells import write_cell
from inproc.record.claim import Claim, clear_cells
from inproc.record.damage import require_raw
from inproc.record.layout import cell_name, cells_dir
from inproc.record.schema import DecodeEntry, PrefillEntry, RunRecord
from inproc.record.tojson import cell_row, entry_id, header_json, to_json

__all__ = ["ResultsWriter", "write_manifest", "write_results", "write_text_atomic"]


def write_text_atomic(path: str | os.PathLike, text: str) -> int:
    """``text`` as UTF-8, written atomically (:func:`inproc.record.atomic.write_atomic`); the bytes written."""
    return write_atomic(path, lambda f: f.write(text.encode("utf-8")))


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
