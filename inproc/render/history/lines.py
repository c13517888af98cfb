"""A history's sentences, each written once for every format.

A change reads "256 x 4 Total tok/s −12 % [−15 %, −9 %] from night-5 (vllm 0.33.1, commit
1a2b3c4), slower against the 4 nights before, confirmed by night-6: <diagnosis>": the cell,
the metric, the step in its figure with the interval of that step, the first night of the
new level, the night after it that confirmed it, and what changed in the steps. Outlier
nights (a night that departed alone), the spread learned per metric, rows without enough
data and unreadable nights follow. ``inproc compare``'s diagnoses name a row's step the same way.
"""
from __future__ import annotations

from inproc.compare.estimate import Estimate
from inproc.compare.samples import METRICS
from inproc.compare.verdicts import INSUFFICIENT
from inproc.history.build import Change, History, Outlier
from inproc.history.series import left_out_reason
from inproc.history.nights import Night
from inproc.units import format_tokens


def signed_pct(ratio: float) -> str:
    """A ratio as a signed change: 0.88 -> "−12 %", 1.031 -> "+3.1 %"."""
    change = (ratio - 1) * 100
    digits = 0 if abs(change) >= 10 else 1
    return f"{'+' if change >= 0 else '−'}{abs(change):.{digits}f} %"


def step_text(metric: str, e: Estimate | None) -> str:
    """"Total tok/s −12 % [−15 %, −9 %]": the change of the figure with its interval."""
    label = METRICS[metric].label
    if e is None:
        return label
    return f"{label} {signed_pct(e.ratio)} [{signed_pct(e.interval.low)}, {signed_pct(e.interval.high)}]"


def cell_text(cell: tuple[int, int]) -> str:
    return f"{format_tokens(cell[0])} x {cell[1]}"


def night_text(n: Night) -> str:
    """"night-5 (vllm 0.33.1, commit 1a2b3c4)"."""
    commit = f", commit {n.commit}" if n.commit else ""
    return f"{n.label} ({n.record.engine.name} {n.version}{commit})"


def change_line(h: History, c: Change) -> str:
    """One change in one line, with its diagnosis and the record keys that changed across it."""
    where = "at the newest night," if c.newest else "from"
    head = f"{cell_text(c.cell)} {step_text(c.metric, c.estimate)} {where} {night_text(h.nights[c.night])}"
    against = f"{c.verdict} against the {len(c.before)} night{'s' if len(c.before) > 1 else ''} before"
    if c.confirmed_by is not None:
        against += f", confirmed by {h.nights[c.confirmed_by].label}"
    record = f" Record: {'; '.join(c.record_changes)}." if c.record_changes else ""
    why = f"{c.reason}; {c.diagnosis}" if c.diagnosis and c.verdict != "status changed" else (c.diagnosis or c.reason)
    return f"{head}, {against}: {why}.{record}"


def outlier_line(h: History, o: Outlier) -> str:
    """"256 x 4 Total tok/s: night-10 −20 % against its level, alone (the next night came back; the level held)"."""
    return (f"{cell_text(o.cell)} {METRICS[o.metric].label}: {h.nights[o.night].label} {signed_pct(o.ratio)} against its "
            f"level, alone (the next night came back; the level held)")


def spread_lines(h: History) -> list[str]:
    """Per metric, the run-to-run spread learned from the nights: its range over the rows and its source."""
    out = []
    for metric in h.settings.compare.metrics:
        found = [sp for (cell, m), sp in sorted(h.spreads.items()) if m == metric]
        if not found:
            out.append(f"{METRICS[metric].label}: no spread yet (too few nights)")
            continue
        lo, hi = min(sp.log_sd for sp in found), max(sp.log_sd for sp in found)
        size = f"{lo * 100:.2g} %" if hi - lo < 1e-12 else f"{lo * 100:.2g}–{hi * 100:.2g} %"
        out.append(f"{METRICS[metric].label}: {size} a night ({found[0].source})")
    return out


def verdict_line(h: History) -> str:
    newest = h.nights[-1].label
    if h.regressions:
        cells = sorted({cell_text(c.cell) for c in h.regressions})
        return f"Regression: {newest} starts a regression in {len(cells)} cell(s): {', '.join(cells)}."
    if h.unjudged:  # never "not slower" about a cell it could not judge
        left = {cell for cell, _ in h.unjudged}
        judged = {c.cell for c in h.newest if c.verdict != INSUFFICIENT} - left
        named = "; ".join(f"{cell_text(cell)} ({why})" for cell, why in h.unjudged)
        if not judged:
            rest = {c.cell for c in h.insufficient} - left
            more = f"; the other {len(rest)}: insufficient data ({h.insufficient[0].reason})" if rest else ""
            return f"Insufficient data: {newest} could not be judged in any cell: {named}{more}."
        return (f"No regression found in the {len(judged)} cell(s) of {newest} judged, but {len(left)} "
                f"could not be judged: {named}.")
    if h.newest and len(h.insufficient) == len(h.newest):
        return f"Insufficient data: {newest} cannot be judged yet ({h.insufficient[0].reason})."
    thr = h.settings.compare
    return (f"No regression: {newest} is not slower beyond the {thr.threshold * 100:g}% threshold "
            f"with {thr.tests.threshold_confidence * 100:g}% confidence.")


def notes(h: History) -> list[str]:
    """Outlier nights, rows without enough data, unreadable nights: a line each."""
    out = [outlier_line(h, o) for o in h.outliers]
    if h.insufficient and len(h.insufficient) < len(h.newest):
        out.append(f"{len(h.insufficient)} row(s) of {h.nights[-1].label} not judged, insufficient data: "
                   f"{h.insufficient[0].reason}")
    for c in h.insufficient:  # what can be said without a spread: the interval it has
        if c.estimate is not None:
            kind = "within-run interval only" if c.estimate.within is not None else "interval"
            out.append(f"{cell_text(c.cell)} {step_text(c.metric, c.estimate)} at {h.nights[-1].label}, not judged "
                       f"({kind})")
    out += [f"unreadable night {u.path}: {u.reason}" for u in h.unreadable]
    out += left_out(h)
    return out


def left_out(h: History) -> list[str]:
    """A line per night's cell left out of the series because the machine was disturbed or throttled."""
    out = []
    for n in h.nights:
        for e in n.record.decode:
            if why := left_out_reason(e):
                out.append(f"{cell_text((e.context, e.concurrency))} at {n.label} left out: {why}")
    return out
