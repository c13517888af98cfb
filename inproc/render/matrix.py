"""The sustained-decode matrix and the notes printed under it, shared by every renderer."""
from __future__ import annotations

from dataclasses import dataclass

from inproc import types as st
from inproc.render import fmt
from inproc.render.measurements import DECODE, Measurement
from inproc.plan.settings import MatrixSettings
from inproc.units import format_tokens

LEGEND = {
    st.QUEUED: "Requests queued: the engine could not run all requests at once, so some waited in its queue "
    "(sampled from the scheduler at every step); the figures are kept and flagged.",
    st.OVER_CAPACITY: "Over capacity: not run because this many requests at this context cannot fit in "
    "the engine's KV cache even at their steady decode footprints, or one request alone cannot at its peak "
    "(blocks counted as the engine allocates them); every other cell runs and the engine decides.",
    st.EXCEEDS_MAX_LEN: "Exceeds max model length: the context plus at least one output token is more than "
    "the engine accepts; not run.",
    st.LOOPED: "Looped: the model kept repeating the same tokens, so the cell's figures are not shown "
    "(repetition inflates speculative-decoding acceptance); the reason names the requests, period and repeats, "
    "and the raw data stays in the results file.",
    st.ERROR: "Error: the engine raised inside this cell, or its cell file cannot be read or lies outside the "
    "results folder (never opened); the reason gives the message and the matrix went on.",
    st.PENDING: "Pending: planned but not measured yet.",
}

DISTURBED_LEGEND = ("Disturbed: other work shared the machine during the cell's window (other processes' CPU, "
                    "steal, a slow CPU clock, another GPU process, or the window's own step time jumping); the "
                    "figures are kept and flagged, left out of compare, baseline, history and bisect verdicts, and "
                    "the cause is named under the table.")

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
    planned: frozenset[tuple[int, int]] | None = None  # a cell list (--cells) or a shard's part; None: the whole grid
    off_plan: str = "not in the run's cell list"  # why a cell outside ``planned`` shows a dash

    def cell(self, context: int, concurrency: int) -> Measurement:
        """The cell's row, a Pending placeholder for a planned cell not measured yet, or a dash off the plan."""
        found = self.cells.get((context, concurrency))
        if found is None and self.planned is not None and (context, concurrency) not in self.planned:
            return Measurement(DECODE, context, concurrency, fmt.DASH, self.off_plan)
        return found or Measurement(DECODE, context, concurrency, st.PENDING, "planned, not measured yet")


def decode_grid(settings: MatrixSettings, rows: list[Measurement],
                shard_cells: tuple[tuple[int, int], ...] | None = None) -> Grid:
    """The grid of a plan's decode cells; ``shard_cells``: a shard's part (the other cells are another shard's)."""
    decode = [m for m in rows if m.phase == DECODE]
    contexts = dict.fromkeys(list(settings.contexts) + [m.context for m in decode])
    concs = dict.fromkeys(list(settings.concurrency) + [m.concurrency for m in decode])
    cells = {(m.context, m.concurrency): m for m in decode}
    if shard_cells is not None:
        return Grid(tuple(sorted(contexts)), tuple(sorted(concs)), cells, frozenset(shard_cells),
                    "in another shard of the plan (inproc merge puts the shards together)")
    planned = frozenset(settings.cells) if settings.cells is not None else None
    return Grid(tuple(sorted(contexts)), tuple(sorted(concs)), cells, planned)


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
    if m.disturbed:
        parts.append("disturbed")
    return parts


def label(m: Measurement) -> str:
    """``8K × 16`` for a decode cell, ``prefill 8K`` for a prefill row."""
    if m.phase == DECODE:
        return f"decode {format_tokens(m.context)} × {m.concurrency}"
    return f"prefill {format_tokens(m.context)}"


def legend_lines(rows: list[Measurement], grid: Grid) -> list[str]:
    """The legend line of every non-Valid status that appears, in the statuses' order, then the disturbed flag's."""
    seen = {m.status for m in rows} | {grid.cell(L, C).status for L in grid.contexts for C in grid.concurrency}
    flagged = [DISTURBED_LEGEND] if any(m.disturbed for m in rows) else []
    return [LEGEND[s] for s in st.STATUSES if s in seen and s in LEGEND] + flagged


def ttft_note(prompt_mode: str) -> str:
    return TTFT_NOTES.get(prompt_mode, f"TTFT: prompt mode {prompt_mode!r} (see the Run section).")


def throttle_warnings(rows: list[Measurement]) -> list[str]:
    """One warning per throttled entry: kept and shown, but its speed is the machine's fault."""
    return [f"Throttled: {label(m)}: {m.throttled.removeprefix('throttled: ')}" for m in rows if m.throttled]


def disturbed_warnings(rows: list[Measurement]) -> list[str]:
    """One warning per disturbed entry (kept and shown, but other work shared the machine during it), and one per
    cell measured again, naming the try its figures come from."""
    out = []
    for m in rows:
        tried = f" (try {len(m.tries) + 1} of {len(m.tries) + 1}, every one disturbed)" if m.tries else ""
        if m.disturbed:
            out.append(f"Disturbed: {label(m)}{tried}: {m.disturbed.removeprefix('disturbed: ')}")
        elif m.tries:
            out.append(f"Measured again: {label(m)}: figures from try {len(m.tries) + 1}; "
                       + "; ".join(f"try {t.number} {t.disturbed}" for t in m.tries))
    return out
