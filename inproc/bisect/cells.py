"""The cells an alarm flagged: from ``inproc compare --format json`` or from the nights ``inproc history`` reads.

- ``--from-compare FILE``: the comparison's ``regressions`` — cells with a slower row, and
  cells that were Valid in the baseline and are not any more — read from its rows.
- ``--from-history FILE/DIR``: the nights are read and judged as ``inproc history`` judges
  them (:func:`inproc.history.build.build_history`); the cells of the newest night's regressions.
"""
from __future__ import annotations

import json
from pathlib import Path

from inproc.errors import UsageError
from inproc.units import parse_tokens


def parse_cell(text: str) -> tuple[int, int]:
    """``4Kx8`` -> (4096, 8)."""
    left, sep, right = text.lower().partition("x")
    try:
        context, concurrency = parse_tokens(left), int(right)
    except (UsageError, ValueError):
        context, concurrency = 0, 0
    if not sep or context <= 0 or concurrency <= 0:
        raise UsageError(f"Bad --cell {text!r}. Give CONTEXTxCONCURRENCY, e.g. 4Kx8 or 256x2.")
    return context, concurrency


def from_compare(path: str) -> list[tuple[int, int]]:
    """The flagged cells of a comparison written by ``inproc compare --format json``."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        doc = None
    if not isinstance(doc, dict) or doc.get("kind") != "inproc-compare":
        raise UsageError(f"--from-compare {path!r} is not a comparison. Give the JSON of 'inproc compare --format json'.")
    flagged = {r["cell"] for r in doc.get("rows", ()) if r.get("verdict") == "slower"}
    flagged |= {str(x).split(" ")[0] for x in doc.get("regressions", ())}
    cells = {(r["context"], r["concurrency"]) for r in doc.get("rows", ()) if r.get("cell") in flagged}
    return sorted(cells)


def from_history(inputs: list[str]) -> list[tuple[int, int]]:
    """The cells of the newest night's regressions in the nights ``inputs`` (files or a folder)."""
    from inproc.history.build import build_history
    from inproc.history.nights import read_nights_checked

    nights, _ = read_nights_checked(inputs)
    return sorted({c.cell for c in build_history(nights).regressions})


def flagged_cells(cell: str | None, compare: str | None, history: tuple[str, ...]) -> list[tuple[int, int]]:
    """The cells to bisect: given, or flagged by the alarm; a one-line error when none is."""
    given = [x for x in (cell, compare, history) if x]
    if len(given) != 1:
        raise UsageError("Give the cell one way: --cell LxC, --from-compare COMPARE.json or --from-history FILE/DIR.")
    if cell:
        return [parse_cell(cell)]
    cells = from_compare(compare) if compare else from_history(list(history))
    if not cells:
        raise UsageError(f"{compare or ', '.join(history)!r} flags no regressed cell: nothing to bisect.")
    return cells
