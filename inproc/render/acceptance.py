"""The report's draft acceptance: one line per speculative decode cell, per draft position.

Read from each cell's :class:`~inproc.measure.acceptance.AcceptanceFigures` (its step rows'
per-step draft counts): the mean acceptance length with its 95 % interval, the forced length
where ``--acceptance`` set one (and the flag when the engine did not apply it), then per position
the drafts accepted there over those that reached it, and that conditional share.
"""
from __future__ import annotations

from inproc.measure.acceptance import AcceptanceFigures
from inproc.record.schema import RunRecord
from inproc.units import format_tokens

NOTE = ("mean acceptance length (tokens per verify step, the bonus token included) with its 95 % interval; "
        "then per draft position: drafts accepted there / drafts that reached it (conditional acceptance)")


def position_line(a: AcceptanceFigures) -> str:
    """``pos 1 22/22 100 % · pos 2 ...`` (reached: see ``inproc.measure.acceptance``)."""
    parts = []
    for i, (acc, reached, cond) in enumerate(zip(a.accepted_at, a.reached_at, a.conditional)):
        share = "–" if cond is None else f"{cond * 100:.0f} %"
        parts.append(f"pos {i + 1} {acc:,}/{reached:,} {share}")
    return " · ".join(parts) or "no per-position counts"


def length_text(a: AcceptanceFigures) -> str:
    """``L 2.48 [2.31, 2.66] of 1,204 drafts`` (forced: ``, forced 2.5``)."""
    if a.mean_length is None:
        return "no drafts in the window"
    interval = f" [{a.length_low:.2f}, {a.length_high:.2f}]" if a.length_low is not None else ""
    forced = f", forced {a.forced_length:g}" if a.forced_length is not None else ""
    return f"L {a.mean_length:.2f}{interval} of {a.drafts:,} drafts{forced}"


def acceptance_lines(rec: RunRecord) -> list[str]:
    """One line per decode cell with drafts counted per step, in the record's order."""
    out = []
    for e in rec.decode:
        a = e.figures.acceptance if e.figures is not None else None
        if a is None:
            continue
        flag = f" — **{a.not_applied}**" if a.not_applied else ""
        out.append(f"- {format_tokens(e.context)} × {e.concurrency}: {length_text(a)}; {position_line(a)}{flag}")
    return out


def markdown_section(rec: RunRecord) -> str:
    lines = acceptance_lines(rec)
    return "\n".join(["## Draft acceptance", "", NOTE, "", *lines]) if lines else ""
