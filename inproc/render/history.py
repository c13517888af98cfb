"""A history as Markdown (fit for ``$GITHUB_STEP_SUMMARY``): the nights, one line per change, the verdict.

A change reads "256 x 4 Total tok/s −12 % [−15 %, −9 %] from night-5 (vllm 0.33.1, commit
1a2b3c4), slower against the 4 nights before: <diagnosis>": the cell, the metric, the step
in its figure with the interval of that step, the first night of the new level, and what
changed in the steps.
"""
from __future__ import annotations

from inproc.compare.estimate import Estimate
from inproc.compare.samples import METRICS
from inproc.history.build import Change, History
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
    record = f" Record: {'; '.join(c.record_changes)}." if c.record_changes else ""
    return f"{head}, {against}: {c.diagnosis or c.reason}.{record}"


def verdict_line(h: History) -> str:
    newest = h.nights[-1].label
    if h.regressions:
        cells = sorted({cell_text(c.cell) for c in h.regressions})
        return f"Regression: {newest} starts a regression in {len(cells)} cell(s): {', '.join(cells)}."
    return f"No regression: {newest} is not slower beyond the {h.settings.compare.threshold * 100:g}% threshold."


def _nights_table(h: History) -> list[str]:
    """One row per night: its date, engine and commit, and each cell's first metric (— where not Valid)."""
    metric = h.settings.compare.metrics[0]
    cells = sorted({cell for cell, m in h.series if m == metric})
    head = "| # | Night | Created | Engine | Commit | " + " | ".join(f"{cell_text(c)} {METRICS[metric].unit}" for c in cells)
    lines = [head + " |", "|---:|---|---|---|---|" + "---:|" * len(cells)]
    for i, n in enumerate(h.nights):
        figures = [h.series[(c, metric)][i].figure for c in cells]
        shown = " | ".join("—" if f is None else f"{f:.4g}" for f in figures)
        lines.append(f"| {i + 1} | {n.label} | {n.record.created} | {n.record.engine.name} {n.version} | "
                     f"{n.commit or '—'} | {shown} |")
    return lines


def render_history_markdown(h: History) -> str:
    """The history's summary: verdict, changes (one line each), the nights."""
    first = h.nights[0].record
    out = [f"## inproc history: {len(h.nights)} nights of {first.profile.name}", "", f"**{verdict_line(h)}**", "",
           "### Changes", ""]
    out += [f"- {change_line(h, c)}" for c in h.changes] or ["No change beyond the noise and the threshold."]
    out += ["", "<details><summary>Nights</summary>", "", *_nights_table(h), "", "</details>", ""]
    return "\n".join(out)


def render_history_text(h: History) -> str:
    """The same, plain: verdict, then one line per change."""
    out = [verdict_line(h), f"{len(h.nights)} nights: {h.nights[0].label} .. {h.nights[-1].label}"]
    out += [f"  {change_line(h, c)}" for c in h.changes] or ["  no change beyond the noise and the threshold"]
    return "\n".join(out) + "\n"
