"""The matrix on a terminal: prefill row, then total tok/s by context x concurrency."""
from __future__ import annotations

from inproc import status as st
from inproc.render.fmt import ms, tok_s
from inproc.results import RunRecord
from inproc.units import format_tokens


def decode_cell_text(e) -> str:
    """What one matrix cell shows: total tok/s and TTFT, or the status name."""
    if e is None:
        return st.PENDING
    if e.status in st.HEADLINE and e.figures is not None:
        flag = " (queued)" if e.status == st.QUEUED else ""
        return f"{tok_s(e.figures.total_tok_s)} / {ms(e.figures.ttft_ms)}{flag}"
    return e.status


def render_matrix(rec: RunRecord) -> str:
    lines = [f"{rec.engine.get('name')} {rec.engine.get('version')} · {rec.profile.get('name')} · "
             f"window {rec.plan.get('window_s')} s · max output {rec.plan.get('max_output')} · prompts {rec.plan.get('prompt_mode')}"]
    if rec.prefill:
        lines += ["", "Prefill (cold): prompt tok/s, TTFT"]
        for e in rec.prefill:
            f = e.figures
            val = f"{tok_s(f.prompt_tok_s)} / {ms(f.ttft_ms)}" if f and f.ttft_ms is not None else e.status
            lines.append(f"  {format_tokens(e.context):>10}  {val}")
    contexts = list(dict.fromkeys(rec.plan.get("contexts", [])))
    concs = list(dict.fromkeys(rec.plan.get("concurrency", [])))
    by_key = {(e.context, e.concurrency): e for e in rec.decode}
    if contexts and concs:
        lines += ["", "Sustained decode: total tok/s / TTFT (rows: context, columns: concurrency)"]
        cells = [[decode_cell_text(by_key.get((L, C))) for C in concs] for L in contexts]
        width = max([len(c) for row in cells for c in row] + [6])
        lines.append(f"  {'Context':>10}  " + "  ".join(f"{C:>{width}}" for C in concs))
        for L, row in zip(contexts, cells):
            lines.append(f"  {format_tokens(L):>10}  " + "  ".join(f"{c:>{width}}" for c in row))
    for note in rec.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)
