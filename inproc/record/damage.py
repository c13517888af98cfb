"""Damage as a value: what a reader found wrong with a file of a results folder, and its one wording.

A cell file that is damaged, missing, another run's (its ``created`` is not the manifest's:
a cell file is matched to its manifest row by the run's identity, never by name alone), or
outside the results file's cell folder (never opened: ``inproc.record.contain``), does not
make the results file unreadable. The stage that finds the problem returns a
:class:`Damage` instead of the file's contents: reading the bytes (``inproc.record.files``:
missing, empty, foreign, cut short, damaged, outside the folder) or bringing them to
today's schema (``inproc.record.document``: another run's, arrays that disagree with their
skeleton). The document carries it, on the entry's row, to the typed record
(``inproc.record.fromjson``), where that entry becomes an Error entry: its reason names the
file and what is wrong (:func:`words`, the one wording of every damage), and it keeps the
status and headline figures the manifest recorded. Every other entry loads as usual, and
the record lists the unreadable ones in ``RunRecord.unreadable``.

A command that reads an entry's raw records (``report --rederive``, ``compare`` of that cell,
``baseline``, ``merge``, ``run --resume``, a night of ``history``) calls :func:`require_raw`,
which stops with that entry's one line; ``report`` shows the Error entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from inproc.errors import UsageError

if TYPE_CHECKING:
    from inproc.record.schema import RunRecord

#: What an entry whose cell file lies outside its folder is called (its reason starts with it).
OUTSIDE = "cell file outside the results folder"
#: How a damaged cell file is mended: read only, never rewritten.
FIX = "Copy the results folder again from where the run wrote it, or measure the cell again."


@dataclass(frozen=True)
class Damage:
    """What is wrong with one file of a results folder (``path``), as found: ``kind`` and its ``detail``.

    ``kind``: missing, empty, foreign (not that kind of file), truncated, damaged (it does not
    read back), another_run, outside (the path leaves the cell folder ``folder``); ``what``: the
    file's role ("cell file", "table file")."""

    path: Path
    kind: str
    detail: str = ""
    what: str = "cell file"
    folder: str = ""


def words(d: Damage) -> str:
    """The one line a user reads for a damage: the file, what is wrong with it, and the fix."""
    if d.kind == "outside":
        return (f"{d.path}: {OUTSIDE} ({d.detail}); not opened. Its cells are read from {d.folder}/ alone: "
                "copy the file itself (not a link to it) into that folder.")
    if d.kind == "missing" and d.what == "cell file":
        return (f"{d.path}: missing cell file (the results file lists it). Copy the folder "
                f"{d.path.parent.name}/ beside the results file too.")
    said = {"missing": f"missing {d.what} (its cell file lists it)",
            "empty": f"empty {d.what} (an interrupted copy?)",
            "foreign": f"not a {d.what} ({d.detail})",
            "truncated": f"truncated {d.what} (its end is missing: an interrupted copy?)",
            "damaged": f"damaged {d.what} ({d.detail})",
            "another_run": f"cell file of another run ({d.detail})"}[d.kind]
    return f"{d.path}: {said}. {FIX}"


def one_line(e: BaseException) -> str:
    """An exception's message on one line (a damage's detail)."""
    return " ".join(str(e).split())


def require_raw(rec: "RunRecord", use: str, entries: Iterable[str] | None = None) -> None:
    """Stop with the first unreadable cell file among ``entries`` (entry ids; None: every entry):
    ``use`` (the command) reads their raw records. A one-line :class:`UsageError`."""
    wanted = None if entries is None else set(entries)
    for cell in rec.unreadable:
        if wanted is None or cell.entry in wanted:
            raise UsageError(f"{cell.reason} ({use} reads that entry's raw records; 'inproc report' shows the rest.)")
