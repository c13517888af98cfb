"""Reading, stage 1 of 3: a results file's bytes as documents. Nothing here knows what a field means.

The manifest (``RESULTS.json``) is parsed as JSON and its version read (:func:`read_json`,
:func:`check_version`); every cell file it lists, and (while the run is unfinished) every cell
file in its folder that it does not list yet, is opened through the folder's containment
(``inproc.record.contain``) and parsed as its format stores it: a schema 9-10 cell file's
gzip JSON and its Parquet tables (``inproc.record.layout``; times stored as integer
nanoseconds are seconds again), a schema 7-8 ``.npz``'s skeleton and array members. A file
that cannot be read is not an error here: its :class:`CellFile` holds the
:class:`~inproc.record.damage.Damage` instead, and the next stage carries it
(``inproc.record.document``). Only a manifest that cannot be read is a one-line error.
"""
from __future__ import annotations

import gzip
import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from inproc.errors import UsageError
from inproc.record.contain import CellFolder
from inproc.record.damage import Damage, one_line
from inproc.record.layout import is_cell_file, table_name
from inproc.record.tables import Table, seconds_of

#: The JSON member of a schema 7-8 ``.npz`` cell file that holds its tree.
SKELETON = "skeleton"


@dataclass(frozen=True)
class CellFile:
    """One cell file as parsed: ``meta`` (its JSON values: a gzip cell file's object, an ``.npz``'s skeleton)
    and ``body`` (its tables, or an ``.npz``'s array members); ``damage`` where either could not be read
    (``meta`` None: the file itself; ``body`` None: a table or member)."""

    name: str
    path: Path
    npz: bool
    meta: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    damage: Damage | None = None


@dataclass(frozen=True)
class ResultsFiles:
    """A manifest and its cell files, parsed as they are consumed: a stream, so that one cell's tables
    are let go before the next cell is read.

    ``listed``: the cell file of each row of the manifest that names one (prefill rows, then decode
    rows); ``unlisted``: the cell files in its folder it does not list, in the order they were written."""

    manifest: dict[str, Any]
    folder: CellFolder | None
    listed: Iterator[CellFile] = iter(())
    unlisted: Iterator[CellFile] = iter(())


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


def read_files(manifest: dict[str, Any], parent: Path | None, listed: bool = True, tables: bool = True) -> ResultsFiles:
    """The cell files of ``manifest`` (lying in ``parent``; None: a run held inline, a baseline's), read as
    they are consumed.

    ``listed``: read the cell files its rows name; the files it does not list are read while its run
    is unfinished (``finished`` false). ``tables``: read each cell file's tables too (else its JSON alone)."""
    folder = CellFolder(parent, str(manifest["cells"])) if parent is not None and manifest.get("cells") else None
    if folder is None:
        return ResultsFiles(manifest, None)
    named = [r.get("cell_file") for r in list(manifest.get("prefill", [])) + list(manifest.get("decode", []))]
    found: list[str] = []
    if not manifest.get("finished"):
        known = set(named)
        # Ordered by when each was written: the link's own time for a symlink, whose target is not looked at.
        found = sorted((n for n in folder.names() if is_cell_file(Path(n)) and n not in known),
                       key=lambda n: (folder.path / n).lstat().st_mtime_ns)
    return ResultsFiles(manifest, folder, (read_cell(folder, n, tables) for n in named if n and listed),
                        (read_cell(folder, n, tables) for n in found))


def read_cell(folder: CellFolder, name: str, tables: bool = True) -> CellFile:
    """Cell file ``name`` of ``folder`` parsed (with its tables or arrays when ``tables``), or its damage."""
    path = folder.where(name)
    if isinstance(path, Damage):
        return CellFile(name, folder.path / name, name.endswith(".npz"), damage=path)
    if path.suffix == ".npz":
        return _npz(name, path, tables)
    meta = _cell_json(path)
    if isinstance(meta, Damage):
        return CellFile(name, path, False, damage=meta)
    if not tables:
        return CellFile(name, path, False, meta)
    body: dict[str, Table] = {}
    for t in meta["tables"]:
        table = folder.where(table_name(name, t), "table file")
        table = _table(table, meta["ns"].get(t, [])) if isinstance(table, Path) else table
        if isinstance(table, Damage):
            return CellFile(name, path, False, meta, damage=table)
        body[t] = table
    return CellFile(name, path, False, meta, body)


def read_arrow(folder: CellFolder, name: str) -> dict[str, pa.Table] | Damage:
    """A schema 9-10 cell's tables as Arrow tables, as stored (``inproc.open``), or the first damage found."""
    cell = read_cell(folder, name, tables=False)
    if cell.damage is not None:
        return cell.damage
    out = {}
    for t in cell.meta["tables"]:
        path = folder.where(table_name(name, t), "table file")
        table = _read_table(path) if isinstance(path, Path) else path
        if isinstance(table, Damage):
            return table
        out[t] = table
    return out


# -- a schema 9-10 cell file: gzip JSON and Parquet tables -----------------------------
def _cell_json(path: Path) -> dict[str, Any] | Damage:
    """The JSON of a cell file, or its damage: missing, empty, cut short, foreign or damaged."""
    if not path.is_file():
        return Damage(path, "missing")
    data = path.read_bytes()
    if not data:
        return Damage(path, "empty")
    if data[:2] != b"\x1f\x8b":
        return Damage(path, "foreign", "not gzip-compressed JSON")
    try:
        doc = json.loads(gzip.decompress(data))
    except EOFError:  # gzip's stream stops before its end marker
        return Damage(path, "truncated")
    except (OSError, zlib.error, ValueError) as e:  # gzip's CRC or zlib's stream, or the JSON
        return Damage(path, "damaged", f"{type(e).__name__}: {one_line(e)}")
    return _shaped(path, doc, _CELL_KEYS, "gzip JSON")


_OPTIONAL = (dict, type(None))
#: What a cell file's JSON object holds, by the types of its values (a gzip JSON without them is some other file):
#: a schema 9-10 cell file's, and a schema 7-8 ``.npz``'s skeleton.
_CELL_KEYS = {"created": (str,), "entry": (dict,), "kind": (str,), "traces": (list,), "telemetry": _OPTIONAL,
              "tables": (list,), "ns": (dict,)}
_SKELETON_KEYS = {"created": (str,), "entry": (dict,)}


def _shaped(path: Path, doc: Any, keys: dict[str, tuple[type, ...]], held: str) -> dict[str, Any] | Damage:
    """``doc`` (what the file's ``held`` parsed to) when it is an object holding ``keys`` with values of their
    types; else a foreign file's damage saying what it holds, so that only its entry is an Error entry."""
    if not isinstance(doc, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(doc), "a number")
        return Damage(path, "foreign", f"{held} holding {kind}, not an object")
    wrong = [k for k, types in keys.items() if k not in doc or not isinstance(doc[k], types)]
    if wrong:
        return Damage(path, "foreign", f"{held} without a cell file's {', '.join(wrong)}")
    return doc


def _read_table(path: Path) -> pa.Table | Damage:
    """A table file, read whole with every page's checksum verified, or its damage."""
    if not path.is_file():
        return Damage(path, "missing", what="table file")
    try:
        return pq.ParquetFile(path, page_checksum_verification=True).read()
    except (OSError, ValueError, pa.ArrowException) as e:
        return _table_damage(path, e)


def _table(path: Path, ns: list[str]) -> Table | Damage:
    """A stored table as :mod:`inproc.record.tables` builds them: seconds back from nanoseconds, numbers
    as numpy arrays, strings and columns with nulls as lists."""
    arrow = _read_table(path)
    if isinstance(arrow, Damage):
        return arrow
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


def _table_damage(path: Path, error: BaseException) -> Damage:
    """What is wrong with a table file pyarrow cannot read, from its bytes: empty, cut short, foreign or damaged."""
    head, tail, size = _ends(path, 4)
    if size == 0:
        return Damage(path, "empty", what="table file")
    if head != b"PAR1":
        return Damage(path, "foreign", "not a Parquet file", "table file")
    if tail[-4:] != b"PAR1":  # a Parquet file ends with its footer and the magic again: a cut-short file has none
        return Damage(path, "truncated", what="table file")
    return Damage(path, "damaged", f"it does not read back: {one_line(error)}", "table file")


# -- a schema 7-8 cell file: one .npz -------------------------------------------------
#: What a zip archive can raise when its bytes are cut short or changed (numpy's own checks raise ValueError).
_ZIP_DAMAGED = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error)
#: A zip's end-of-directory record lies in its last 22 bytes plus a comment of at most 64 KiB.
_EOCD_SPAN = 22 + 65535


def _npz(name: str, path: Path, arrays: bool) -> CellFile:
    """An ``.npz`` cell file's skeleton (its JSON tree) and, when ``arrays``, its other members (no pickles are read)."""
    if not path.is_file():
        return CellFile(name, path, True, damage=Damage(path, "missing"))
    try:
        with np.load(path, allow_pickle=False) as npz:
            if SKELETON not in npz.files:
                return CellFile(name, path, True, damage=Damage(path, "foreign", f"no {SKELETON!r} member"))
            skeleton = _shaped(path, json.loads(npz[SKELETON].tobytes()), _SKELETON_KEYS, f"its {SKELETON!r}")
            if isinstance(skeleton, Damage):
                return CellFile(name, path, True, damage=skeleton)
            try:  # the skeleton alone says whose cell it is, even where an array member is damaged
                members = {n: npz[n] for n in npz.files if n != SKELETON} if arrays else None
            except _ZIP_DAMAGED as e:
                return CellFile(name, path, True, skeleton, damage=_zip_damage(path, e))
    except _ZIP_DAMAGED as e:
        return CellFile(name, path, True, damage=_zip_damage(path, e))
    return CellFile(name, path, True, skeleton, members)


def _zip_damage(path: Path, error: BaseException) -> Damage:
    """What is wrong with a cell file numpy cannot read, from its bytes: empty, cut short, foreign or damaged."""
    head, tail, size = _ends(path, _EOCD_SPAN)
    if size == 0:
        return Damage(path, "empty")
    if head != b"PK\x03\x04":
        return Damage(path, "foreign", "not a zip archive")
    if b"PK\x05\x06" not in tail:  # a zip's directory is at its end: a cut-short file has none
        return Damage(path, "truncated")
    return Damage(path, "damaged", f"a member does not read back: {type(error).__name__}: {one_line(error)}")


def _ends(path: Path, span: int) -> tuple[bytes, bytes, int]:
    """A file's first 4 bytes, its last ``span`` bytes, and its size."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(4)
        f.seek(max(0, size - span))
        return head, f.read(), size
