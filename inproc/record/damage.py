"""Entries whose cell file cannot be read, and the commands that need their raw records.

A cell file that is damaged, missing, another run's (its ``created`` is not the manifest's:
a cell file is matched to its manifest row by the run's identity, never by name alone), or
outside the results file's cell folder (never opened: ``inproc.record.contain``) does
not make the results file unreadable. That entry is loaded from its manifest row as an Error
entry: its reason names the cell file and what is wrong, and it keeps the status and headline
figures the manifest recorded (the figures, not the status, stay in the entry; the reason
says the status). Every other entry loads as usual, and the record lists the unreadable ones
in ``RunRecord.unreadable``.

A command that reads an entry's raw records (``report --rederive``, ``compare`` of that cell,
``baseline``, ``merge``, ``run --resume``, a night of ``history``) calls :func:`require_raw`,
which stops with the reader's one line naming the file; ``report`` shows the Error entry.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Iterable

from inproc import types as st
from inproc.errors import UsageError
from inproc.measure.judge import Verdict
from inproc.plan.matrix import CellPlan
from inproc.record import cached, derive
from inproc.record.contain import OUTSIDE
from inproc.record.schema import DecodeEntry, PrefillEntry, RunPlan, RunRecord, UnreadableCell

#: A cell file's name: the entry's id (``inproc.record.tojson.entry_id``) and its suffix.
_ENTRY_NAME = re.compile(r"(?:prefill-(\d+)|decode-(\d+)x(\d+))(?:\.[a-z0-9]+)+")


def entry_of_row(row: dict[str, Any]) -> str:
    """The entry id of a manifest row, from its key (``decode-256x4``; ``tojson.entry_id``), not from its
    cell file's name, which may name anything."""
    return f"decode-{row['context']}x{row['concurrency']}" if "concurrency" in row else f"prefill-{row['context']}"


def another_run(path: Path, cell_created: Any, created: Any) -> UsageError:
    """The error of a cell file written by another run than the manifest's."""
    return UsageError(f"{path}: cell file of another run (written by the run created {cell_created!r}; this results "
                      f"file's run was created {created!r}). Copy the results folder again from where the run wrote "
                      "it, or measure the cell again.")


def unreadable(path: Path, error: UsageError, entry: str) -> UnreadableCell:
    return UnreadableCell(entry, str(path), str(error))


def unreadable_entry(row: dict[str, Any], cell: UnreadableCell, plan: RunPlan) -> PrefillEntry | DecodeEntry:
    """The Error entry standing for ``row`` (a manifest row) whose cell file ``cell`` could not be read."""
    path = Path(cell.path)
    what = cell.reason.removeprefix(f"{path}: ")
    # A path outside the folder says so first (its reason names the path as the manifest gave it).
    error = what if what.startswith(OUTSIDE) else f"cell file {path.parent.name}/{path.name} unreadable: {what}"
    verdict = Verdict(st.ERROR, f"{error} ({_recorded(row)})", ())
    if "concurrency" not in row:
        figures = cached.prefill_figures(row) if row.get("ttft_ms") is not None else None
        return PrefillEntry(row["context"], verdict, (), figures, error=error)
    cellplan = CellPlan(row["context"], row["concurrency"], row.get("max_tokens", 0), None)
    entry = derive.unmeasured_entry(cellplan, row.get("prompt_mode", plan.settings.prompt_mode), "", verdict, error)
    return dataclasses.replace(entry, figures=cached.decode_figures(row))


def _recorded(row: dict[str, Any]) -> str:
    """What the manifest said of the entry: its status, reason and headline figures."""
    if not row.get("status"):
        return "not yet in the manifest"
    shown = [f"{row[k]:.1f} {unit}" for k, unit in _HEADLINE if isinstance(row.get(k), (int, float))]
    said = f"the manifest recorded {row['status']}" + (f": {row['reason']}" if row.get("reason") else "")
    return said + (f"; {', '.join(shown)}" if shown else "")


#: The figures an Error entry's reason repeats from its manifest row (the matrix shows no figure of an Error cell).
_HEADLINE = (("total_tok_s", "tok/s"), ("prompt_tok_s", "prompt tok/s"), ("ttft_ms", "ms TTFT"))


def unlisted_row(name: str, plan: dict[str, Any]) -> dict[str, Any] | None:
    """The row of a cell file not yet in an unfinished run's manifest that could not be read, when its
    name is an entry of the plan (None otherwise: a stray file is no entry)."""
    m = _ENTRY_NAME.fullmatch(name)
    if m is None:
        return None
    if m.group(1) is not None:
        context = int(m.group(1))
        return {"context": context, "cell_file": name} if context in (plan.get("prefill_list") or ()) else None
    context, concurrency = int(m.group(2)), int(m.group(3))
    if context in (plan.get("contexts") or ()) and concurrency in (plan.get("concurrency") or ()):
        return {"context": context, "concurrency": concurrency, "cell_file": name}
    return None


def require_raw(rec: RunRecord, use: str, entries: Iterable[str] | None = None) -> None:
    """Stop with the first unreadable cell file among ``entries`` (entry ids; None: every entry):
    ``use`` (the command) reads their raw records. A one-line :class:`UsageError`."""
    wanted = None if entries is None else set(entries)
    for cell in rec.unreadable:
        if wanted is None or cell.entry in wanted:
            raise UsageError(f"{cell.reason} ({use} reads that entry's raw records; 'inproc report' shows the rest.)")
