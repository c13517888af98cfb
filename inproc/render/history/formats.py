"""``inproc history`` as text and as Markdown (fit for ``$GITHUB_STEP_SUMMARY``): each an arrangement of the one
view (:class:`~inproc.render.history.view.HistoryView`) with the shared writers. Both put the verdict first, then
a line per change, outlier and note, then the spread learned; Markdown folds the nights' table at the end."""
from __future__ import annotations

from inproc.history.build import History
from inproc.render.history.view import HistoryView, history_view
from inproc.render.writers import markdown_table

NO_CHANGE = "no change beyond the noise and the threshold"


def markdown(v: HistoryView) -> str:
    """The history's summary: verdict, changes (one line each), outliers and notes, the spread learned, the nights."""
    out = [f"## inproc history: {v.nights} nights of {v.profile}", "", f"**{v.verdict}**", "", "### Changes", ""]
    out += [f"- {c}" for c in v.changes] or [f"{NO_CHANGE.capitalize()}."]
    if v.notes:
        out += ["", "### Outlier nights and notes", "", *[f"- {n}" for n in v.notes]]
    out += ["", "### Spread learned from the nights", "", *[f"- {x}" for x in v.spreads]]
    out += ["", "<details><summary>Nights</summary>", "", markdown_table(v.figures), "", "</details>", ""]
    return "\n".join(out)


def text(v: HistoryView) -> str:
    """The same, plain: verdict, then one line per change, outlier and note, then the spread learned."""
    out = [v.verdict, f"{v.nights} nights: {v.first} .. {v.newest}"]
    out += [f"  {c}" for c in v.changes] or [f"  {NO_CHANGE}"]
    out += [f"  {n}" for n in v.notes]
    out += ["Spread learned from the nights:"] + [f"  {x}" for x in v.spreads]
    return "\n".join(out) + "\n"


FORMATS = {"text": text, "md": markdown}


def render_history_markdown(h: History) -> str:
    return markdown(history_view(h))


def render_history_text(h: History) -> str:
    return text(history_view(h))
