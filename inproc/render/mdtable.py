"""Markdown tables, for every Markdown renderer (``inproc.render.markdown`` re-exports them)."""
from __future__ import annotations


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def table(head: list[str], body: list[list[str]], right: tuple[int, ...] = ()) -> str:
    """A GitHub Markdown table; the columns numbered in ``right`` are right-aligned."""
    rule = "".join("---:|" if i in right else "---|" for i in range(len(head)))
    lines = ["| " + " | ".join(cell(h) for h in head) + " |", "|" + rule]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in body]
    return "\n".join(lines)
