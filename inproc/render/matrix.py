"""The sustained-decode matrix and the notes printed under it, shared by every renderer."""
from __future__ import annotations

from dataclasses import dataclass

from inproc import status as st
from inproc.render import fmt
from inproc.render.measurements import DECODE, Measurement
from inproc.units import format_tokens

MEDIANS_NOTE = "Latencies are medians. Total tok/s is output across all simultaneous requests."
TTFT_NOTES = {
    "shared": "TTFT is measured with the context warm in the prefix cache, so it mostly excludes prefill.",
    "distinct": "TTFT is measured cold: every request has its own context, so it includes that context's prefill "
    "(and any wait behind other requests' prefills).",
}


@dataclass(frozen=True)
class Grid:
    """Rows = contexts, columns = concurrency levels, as planned (plus any measured extra)."""

    contexts: tuple[int, ...]
    concurrency: tuple[int, ...]
    cells: dict[tuple[int, int], Measurement]

    def cell(self, context: int, concurrency: int) -> Measurement:
        """The cell's row, or a Pending placeholder for a planned cell not measured yet."""
        found = self.cells.get((context, concurrency))
        return found or Measurement(DECODE, context, concurrency, st.PENDING, "planned, not measured yet")


def decode_grid(plan: dict, rows: list[Measurement]) -> Grid:
    decode = [m for m in rows if m.phase == DECODE]
    contexts = dict.fromkeys(list(plan.get("contexts") or []) + [m.context for m in decode])
    concs = dict.fromkeys(list(plan.get("concurrency") or []) + [m.concurrency for m in decode])
    return Grid(tuple(sorted(contexts)), tuple(sorted(concs)), {(m.context, m.concurrency): m for m in decode})


def headline(m: Measurement) -> bool:
    """Whether the matrix shows this cell's figures (Valid, or Requests queued flagged)."""
    return m.status in st.HEADLINE and m.total_tok_s is not None


def cell_parts(m: Measurement) -> list[str]:
    """What a matrix cell shows, in order: total tok/s, the queued flag, TTFT; or the status name."""
    if not headline(m):
        return [m.status]
    parts = [fmt.tok_s(m.total_tok_s)]
    if m.status == st.QUEUED:
        parts.append(st.QUEUED)
    parts.append(f"{fmt.ms(m.ttft_ms)} TTFT")
    if m.throttled:
        parts.append("throttled")
    return parts


def label(m: Measurement) -> str:
    """``8K × 16`` for a decode cell, ``prefill 8K`` for a prefill row."""
    if m.phase == DECODE:
        return f"decode {format_tokens(m.context)} × {m.concurrency}"
    return f"prefill {format_tokens(m.context)}"


def legend_lines(rows: list[Measurement], grid: Grid) -> list[str]:
    """The legend line of every non-Valid status that appears, in the statuses' order."""
    seen = {m.status for m in rows} | {grid.cell(L, C).status for L in grid.contexts for C in grid.concurrency}
    return [st.LEGEND[s] for s in st.ALL if s in seen and s in st.LEGEND]


def ttft_note(prompt_mode: str | None) -> str:
    return TTFT_NOTES.get(prompt_mode or "", f"TTFT: prompt mode {prompt_mode!r} (see the Run section).")


def throttle_warnings(rows: list[Measurement]) -> list[str]:
    """One warning per throttled entry: kept and shown, but its speed is the machine's fault."""
    return [f"Throttled: {label(m)}: {m.throttled.removeprefix('throttled: ')}" for m in rows if m.throttled]
