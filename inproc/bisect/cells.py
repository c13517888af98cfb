"""The cells an alarm flagged: from ``inproc compare --format json`` or from the nights ``inproc history`` reads.

- ``--from-compare FILE``: the comparison's ``regressions`` — cells with a slower row, and
  cells that were Valid in the baseline and are not any more — read from its rows.
- ``--from-history FILE/DIR``: the nights are read and judged as ``inproc history`` judges
  them (:func:`inproc.history.build.build_history`); the cells of the newest night's regressions.

Each flagged cell comes with the run spread of Total tok/s where the alarm came from
(:class:`AlarmSpread`): the one history learned for that cell from the runner's nights, or
the one compare's test used for the cell (its baseline's). The bisect holds its runs
against it (:mod:`inproc.bisect.agree`).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class AlarmSpread:
    """σ of one run's log Total tok/s as the alarm's source learned it, its degrees of freedom, the source in words."""

    sigma: float
    df: float
    source: str


Flagged = dict[tuple[int, int], "AlarmSpread | None"]


def _compare_spread(row: dict, path: str) -> AlarmSpread | None:
    sd = row.get("run_spread")
    if row.get("needed_spread") is not None:  # one run each side: --max-spread is a bound, not a measured spread
        return None
    if not isinstance(sd, (int, float)) or sd <= 0:
        return None
    m = re.search(r"\(df (\d+)\)", row.get("spread_source") or "")
    return AlarmSpread(float(sd), float(m.group(1)) if m else math.inf, f"the baseline's spread in {path}")


def from_compare(path: str) -> Flagged:
    """The flagged cells of a comparison written by ``inproc compare --format json``, each with its tok/s spread."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        doc = None
    if not isinstance(doc, dict) or doc.get("kind") != "inproc-compare":
        raise UsageError(f"--from-compare {path!r} is not a comparison. Give the JSON of 'inproc compare --format json'.")
    flagged = {r["cell"] for r in doc.get("rows", ()) if r.get("verdict") == "slower"}
    flagged |= {str(x).split(" ")[0] for x in doc.get("regressions", ())}
    rows = [r for r in doc.get("rows", ()) if r.get("cell") in flagged]
    out: Flagged = {(r["context"], r["concurrency"]): None for r in rows}
    for r in rows:
        if r.get("metric") == "tok_s":
            out[(r["context"], r["concurrency"])] = _compare_spread(r, path)
    return dict(sorted(out.items()))


def from_history(inputs: list[str]) -> Flagged:
    """The cells of the newest night's regressions in the nights ``inputs`` (files or a folder), each with the
    tok/s spread history learned for it from those nights."""
    from inproc.history.build import build_history
    from inproc.history.nights import read_nights_checked

    nights, _ = read_nights_checked(inputs)
    h = build_history(nights)
    out: Flagged = {}
    for cell in sorted({c.cell for c in h.regressions}):
        sp = h.spreads.get((cell, "tok_s"))
        out[cell] = AlarmSpread(sp.log_sd, sp.df, f"history's spread of the cell ({sp.source})") if sp else None
    return out


def flagged_cells(cell: str | None, compare: str | None, history: tuple[str, ...]) -> Flagged:
    """The cells to bisect, each with the alarm's spread (None: none known): given, or flagged by the alarm; a
    one-line error when none is."""
    given = [x for x in (cell, compare, history) if x]
    if len(given) != 1:
        raise UsageError("Give the cell one way: --cell LxC, --from-compare COMPARE.json or --from-history FILE/DIR.")
    if cell:
        return {parse_cell(cell): None}
    cells = from_compare(compare) if compare else from_history(list(history))
    if not cells:
        raise UsageError(f"{compare or ', '.join(history)!r} flags no regressed cell: nothing to bisect.")
    return cells
