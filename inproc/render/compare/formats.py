"""``inproc compare`` as text and Markdown (fit for ``$GITHUB_STEP_SUMMARY``): each an arrangement of the one view
(:class:`~inproc.render.compare.view.CompareView`, or two engines'
:class:`~inproc.render.compare.side_by_side.SideBySideView`) with the shared writers.

Text reads like asv's ``compare`` and pyperf's ``compare_to``: a mark per row, the ratio with its interval, the
geometric means, the verdict last. Markdown puts the verdict first, then the changes, then every row folded.
"""
from __future__ import annotations

import json
import textwrap
from typing import Sequence

from inproc.compare.verdicts import Comparison
from inproc.history.explain import Explained
from inproc.render.compare.data import diagnoses_json
from inproc.render.compare.side_by_side import SideBySideView
from inproc.render.compare.view import CompareView, VerdictRow, compare_view, diagnosis_lines
from inproc.render.writers import markdown_table, text_table

DIAGNOSES = "What changed in the steps"


def _esc(text: str) -> str:
    return text.replace("|", "\\|")


def _text_rows(v: CompareView) -> list[str]:
    """The rows aligned, each behind its mark; the verdict column is not padded."""
    table = [list(v.columns)] + [list(r.cells) for r in v.rows]
    marks = [" "] + [r.mark for r in v.rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(v.columns) - 1)]
    return [f"{mark} " + "  ".join(f"{x:<{w}}" for x, w in zip(row, widths)) + "  " + row[-1]
            for mark, row in zip(marks, table)]


def text(v: CompareView) -> str:
    """For a terminal: header, aligned rows with their marks, the kernels, the diagnoses, geometric means, verdict."""
    lines = [*v.header, "", *_text_rows(v)]
    if v.kernels:
        k = v.kernels
        lines += ["", k.title, textwrap.fill(k.rule, 118, initial_indent="  ", subsequent_indent="  "),
                  *[f"  {x}" for x in k.lines]]
    if v.diagnoses:
        lines += ["", f"{DIAGNOSES}:", *[f"  {x}" for x in v.diagnoses]]
    return "\n".join(lines + ["", f"Marks: {v.legend}.", v.geomeans, v.summary]) + "\n"


def _md_rows(columns: Sequence[str], rows: Sequence[VerdictRow]) -> list[str]:
    out = ["| | " + " | ".join(columns) + " |", "|" + "---|" * (len(columns) + 1)]
    for r in rows:
        cells = [_esc(x) for x in r.cells]
        if r.strong:
            cells[-1] = f"**{cells[-1]}**"
        mark = r.mark.strip()
        out.append(f"| {f'`{mark}`' if mark else ''} | " + " | ".join(cells) + " |")
    return out


def markdown(v: CompareView) -> str:
    """As GitHub Markdown: the verdict first, then the changes, the kernels and the diagnoses, then every row folded."""
    lines = [f"## inproc compare: {v.title}", "", f"**{_esc(v.summary)}**", ""]
    lines += [f"- {_esc(h)}" for h in (*v.header, v.geomeans)] + [""]
    changes = [r for r in v.rows if r.change]
    if changes:
        lines += ["### Changes", "", *_md_rows(v.columns, changes), ""]
    if v.kernels:
        k = v.kernels
        lines += [f"### {k.title}", "", _esc(k.rule), "", *[f"- {_esc(x)}" for x in k.lines], ""]
    if v.diagnoses:
        lines += [f"### {DIAGNOSES}", "", *[f"- {_esc(x)}" for x in v.diagnoses], ""]
    lines += [f"<details><summary>All {len(v.rows)} rows</summary>", "", *_md_rows(v.columns, v.rows), "",
              "</details>", ""]
    defs = [f"- **{label}**: {_esc(text)}" for label, text in v.definitions]
    return "\n".join(lines + ["<details><summary>Definitions</summary>", "", *defs, "", "</details>", ""])


def side_by_side_text(v: SideBySideView) -> str:
    """For a terminal: the header, then aligned rows (a status row per cell, then its figures)."""
    return "\n".join([*v.header, "", *text_table(v.table)]) + "\n"


def side_by_side_markdown(v: SideBySideView) -> str:
    """As GitHub Markdown (for ``$GITHUB_STEP_SUMMARY``)."""
    lines = [f"## inproc compare: {v.title}", "", *[f"- {_esc(h)}" for h in v.header], "", markdown_table(v.table)]
    return "\n".join(lines) + "\n"


COMPARE = {"text": text, "md": markdown}
SIDE_BY_SIDE = {"text": side_by_side_text, "md": side_by_side_markdown}


def render_compare_text(c: Comparison, explained: Sequence[Explained] = ()) -> str:
    return text(compare_view(c, explained))


def render_compare_markdown(c: Comparison, explained: Sequence[Explained] = ()) -> str:
    return markdown(compare_view(c, explained))


def render_diagnoses(explained: Sequence[Explained], fmt: str) -> str:
    """What changed in the steps of each slower or faster row (``inproc.history.explain``), alone: the section the
    comparison's text ("text") and Markdown ("md") place after its rows ("" when no row is slower or faster); "json":
    the document's "diagnoses" (``data.diagnoses_json``)."""
    if fmt == "json":
        return json.dumps(diagnoses_json(explained))
    lines = diagnosis_lines(explained)
    if not lines:
        return ""
    if fmt == "md":
        return f"### {DIAGNOSES}\n\n" + "".join(f"- {_esc(x)}\n" for x in lines) + "\n"
    return f"\n{DIAGNOSES}:\n" + "".join(f"  {x}\n" for x in lines)
