"""Reading, stage 2 of 3: the files of stage 1 (``inproc.record.files``) as one document at today's schema.

The manifest is brought to today's schema one version at a time (``inproc.record.migrate``,
where the history of both the manifest and the cell files is written), and each entry's raw
records are put back into its row, as the inline form holds them (``raw``, ``trace``,
``telemetry.trace``): a schema 7-8 cell file's arrays joined into its tree
(``inproc.record.migrate_cells``), a schema 9-10 cell file's tables turned back into it
(``inproc.record.fromtables``). An unfinished run's cell files written after its manifest
was (same ``created``) are added as rows. A row whose cell file could not be read, or is
another run's, carries its damage as a value instead of raw records (:data:`UNREADABLE`, an
``UnreadableCell``); stage 3 (``inproc.record.fromjson``) makes it the Error entry. The rows are
a stream (:class:`Document`): each is made from its cell file as stage 3 asks for it, so one
cell's tables are let go before the next is read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from inproc.record import fromtables, migrate_cells
from inproc.record.damage import Damage, words
from inproc.record.files import CellFile, ResultsFiles
from inproc.record.layout import ENTRY_FILE, entry_name
from inproc.record.migrate import migrate
from inproc.record.schema import UnreadableCell

#: The key of a row whose cell file could not be read: its ``UnreadableCell`` (the row then holds no raw records).
UNREADABLE = "@unreadable"


@dataclass(frozen=True)
class Document:
    """The results document at today's schema: ``header`` (the manifest without its rows) and ``rows``, a
    stream of (``"prefill"`` or ``"decode"``, the row with its raw records or its damage): the manifest's
    rows in order, then those of the cell files it does not list yet."""

    header: dict[str, Any]
    rows: Iterator[tuple[str, dict[str, Any]]]


def current(files: ResultsFiles) -> Document:
    """The results document at today's schema, each row with its raw records (or its damage), made as
    the rows are consumed (the input is left as it was)."""
    data = migrate(files.manifest)
    header = {k: v for k, v in data.items() if k not in ("prefill", "decode")}
    return Document(header, _rows(data, files))


def manifest_rows(files: ResultsFiles) -> dict[str, Any]:
    """The manifest at today's schema with the rows of the cell files it does not list yet, as their JSON
    holds them; no raw records (``inproc.open``, which reads a cell's tables when asked)."""
    data = migrate(files.manifest)
    rows = {"prefill": list(data.get("prefill", [])), "decode": list(data.get("decode", []))}
    if files.folder is not None and not data.get("finished"):
        for cell in files.unlisted:
            row = _unlisted(cell, data)
            if row is not None:
                rows[_kind(row)].append(row)
    return {**data, **rows}


def _rows(data: dict[str, Any], files: ResultsFiles) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each row of ``data`` (a migrated manifest) with the next of ``files.listed``, then the unlisted cells' rows."""
    created = data.get("created")
    for kind in ("prefill", "decode"):
        for row in data.get(kind, []):
            cell = next(files.listed) if row.get("cell_file") and files.folder is not None else None
            yield kind, _with_cell(row, cell, files, created)
    if files.folder is not None and not data.get("finished"):
        for cell in files.unlisted:
            row = _unlisted(cell, data)
            if row is not None:
                yield _kind(row), _with_cell(row, cell, files, created)


def _kind(row: dict[str, Any]) -> str:
    return "decode" if "concurrency" in row else "prefill"


def _unlisted(cell: CellFile, data: dict[str, Any]) -> dict[str, Any] | None:
    """The row of an unfinished run's cell file not in its manifest (same ``created``: cell files of an
    earlier run at this path are passed over; None). A measured entry's cell file has no status or
    headline figures (``tojson.cell_row``): its row loads derived again from its raw records.

    One that cannot be read, named as an entry of the plan, is added as a bare row: it loads
    as an Error entry naming it, since it may be this run's; so is one that is a symlink leading
    out of the folder (never opened: ``inproc.record.contain``)."""
    if cell.meta is None:
        return unlisted_row(cell.name, data.get("plan") or {})
    ours = cell.meta.get("created") == data.get("created") and "entry" in cell.meta
    return {**cell.meta["entry"], "cell_file": cell.name} if ours else None


def unlisted_row(name: str, plan: dict[str, Any]) -> dict[str, Any] | None:
    """The row of a cell file not yet in an unfinished run's manifest that could not be read, when its
    name is an entry of the plan (None otherwise: a stray file is no entry)."""
    m = ENTRY_FILE.fullmatch(name)
    if m is None:
        return None
    if m.group(1) is not None:
        context = int(m.group(1))
        return {"context": context, "cell_file": name} if context in (plan.get("prefill_list") or ()) else None
    context, concurrency = int(m.group(2)), int(m.group(3))
    if context in (plan.get("contexts") or ()) and concurrency in (plan.get("concurrency") or ()):
        return {"context": context, "concurrency": concurrency, "cell_file": name}
    return None


def entry_of_row(row: dict[str, Any]) -> str:
    """The entry id of a manifest row, from its key (``decode-256x4``; ``tojson.entry_id``), not from its
    cell file's name, which may name anything."""
    return entry_name(row["context"], row.get("concurrency"))


def _with_cell(row: dict[str, Any], cell: CellFile | None, files: ResultsFiles, created: Any) -> dict[str, Any]:
    """A row with its raw records put back from its cell file ``cell`` (inline rows as they are), or with its
    damage (:data:`UNREADABLE`) when that file cannot be read or is another run's."""
    name = row.get("cell_file")
    if not name:
        return row
    if files.folder is None or cell is None:
        raise ValueError(f"entry names cell file {name!r} but the record was not read from a file")
    assert cell.name == name, (cell.name, name)  # files.listed follows the rows
    tree = cell_tree(cell)
    if not isinstance(tree, Damage) and tree.get("created") != created:
        tree = Damage(cell.path, "another_run", f"written by the run created {tree.get('created')!r}; this results "
                      f"file's run was created {created!r}")
    if isinstance(tree, Damage):
        return {**row, UNREADABLE: UnreadableCell(entry_of_row(row), str(files.folder.path / name), words(tree))}
    d = {**row, **tree.get("entry", {}), "raw": tree.get("samples"), "trace": tree.get("trace")}
    if d.get("telemetry") is not None:
        d["telemetry"] = {**d["telemetry"], "trace": tree.get("telemetry")}
    return d


def cell_tree(cell: CellFile) -> dict[str, Any] | Damage:
    """A cell file's raw tree (``created``, ``entry``, ``trace`` or ``samples``, ``telemetry``), or its damage."""
    if cell.damage is not None:
        return cell.damage
    if cell.npz:
        return migrate_cells.cell_tree(cell.path, cell.meta, cell.body)
    return fromtables.cell_tree(cell.meta, cell.body)
