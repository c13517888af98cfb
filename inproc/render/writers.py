"""The shared writers: a view's tables and paragraphs as Markdown, aligned text or HTML.

A subject's view (its rows, lines, notes, definitions and chart series, built once from the
record) holds strings; a writer here turns a piece of any view into one format, so a column
added to a view shows in every format without a change here or in a subject's arrangement.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from inproc.render import mdtable
from inproc.render.svg import t


@dataclass(frozen=True)
class Table:
    """A table of a view: its head and rows, every value already formatted."""

    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: tuple[int, ...] = ()  # the columns of numbers, right-aligned where a format aligns them (Markdown)


def markdown_table(table: Table) -> str:
    """A GitHub Markdown table."""
    return mdtable.table(list(table.head), [list(r) for r in table.rows], table.right)


def text_table(table: Table) -> list[str]:
    """The table's lines for a terminal: columns left-aligned, two spaces apart."""
    head, rows = table.head, table.rows
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    line = lambda r: "  ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip()  # noqa: E731
    return [line(head), *map(line, rows)]


def html_table(table: Table, *, marked: Sequence[bool] = (), mark_class: str = "", table_class: str = "",
               head_class: str = "l") -> str:
    """An HTML table, left-aligned, scrolling sideways when wide; each row ``marked`` gets ``mark_class`` (a best
    variant, a slower row), ``table_class`` styles the whole table."""
    on = lambda cls: f" class={cls}" if cls else ""  # noqa: E731
    th = "".join(f"<th{on(head_class)}>{t(h)}</th>" for h in table.head)
    trs = "".join(f"<tr{on(mark_class) if i < len(marked) and marked[i] else ''}>"
                  + "".join(f"<td class=l>{t(v)}</td>" for v in row) + "</tr>" for i, row in enumerate(table.rows))
    styled = f' class="{table_class}"' if table_class else ""
    return f'<div class="scroll"><table{styled}><tr>{th}</tr>{trs}</table></div>'


def html_paragraphs(lines: tuple[str, ...] | list[str]) -> str:
    """One HTML paragraph per line."""
    return "".join(f"<p>{t(line)}</p>" for line in lines)


def html_definitions(definitions: tuple[tuple[str, str], ...], code: bool = False) -> str:
    """Terms and their definitions as a two-column facts table (``code``: `backticks` set as code)."""
    text = (lambda v: re.sub(r"`([^`]+)`", r"<code>\1</code>", t(v))) if code else t
    return '<table class="facts">' + "".join(f"<tr><td>{t(k)}</td><td>{text(v)}</td></tr>" for k, v in definitions) + "</table>"


def markdown_definitions(definitions: tuple[tuple[str, str], ...]) -> list[str]:
    """Terms and their definitions as a Markdown list."""
    return [f"- **{k}**: {v}" for k, v in definitions]
