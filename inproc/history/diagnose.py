"""What changed in the steps: a significant change of a cell explained from its step anatomy.

A cell's Total tok/s is tokens ÷ window, and the window is the steps' time plus the time
between them, so

    log(tok/s) = log(tokens per step) − log(mean step time) + log(busy share)

(busy share: Σ step time ÷ window). A change in tok/s is the sum of the three terms'
changes, and the step time's change splits into its forward part (step − host) and its
host part (scheduler batch forming + output processing) by their shares of the change in
seconds. Each term's share of the change is how much of it it explains; the terms are
ranked by that. Time between tokens moves the other way (a longer step is a longer gap),
so its change is explained by the same terms with the sign turned. TTFT (before the window)
is not decomposed: the window's facts that moved follow it as context.

The other facts of the anatomy are named where they moved: CUDA-graph modes, padding
waste, the batch-size histogram, bytes and FLOPs per token and the bandwidth fraction,
speculative acceptance, preemptions and queue depth, KV blocks, clocks, power, throttling
and the engine process's CPU use. Where nothing moved: "unexplained by the step records".

Where every run on both sides has a kernel pass, the diagnosis names the kernel category the
change sits in, and the kernels within it, by ``inproc.compare.kernels``'s rule.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from inproc.compare.kernels import diagnosis as kernel_diagnosis
from inproc.history.facts import moved_facts, pct
from inproc.history.tail import UNCHANGED, tail_split, tail_text
from inproc.record.compact import CellAnatomy

#: A term explaining less than this share of the change is not named.
MIN_SHARE = 0.15


@dataclass(frozen=True)
class Cause:
    """One term of the change: its share of the change (1.0: all of it) and its description with numbers."""

    share: float
    text: str


def median_of(anatomies: Sequence[CellAnatomy], get: Callable[[CellAnatomy], float | None]) -> float | None:
    """The median over runs of one anatomy figure (None when no run has it)."""
    values = [v for v in (get(a) for a in anatomies) if v is not None and math.isfinite(v)]
    return float(np.median(values)) if values else None


def _forward_by_size(base: Sequence[CellAnatomy], new: Sequence[CellAnatomy]) -> str:
    """Forward (or step) time per batch size, for sizes in both: ", batch 4" when there is one size."""
    def per_size(runs):
        out: dict[int, list[float]] = {}
        for a in runs:
            for b in a.batch_times:
                out.setdefault(b.size, []).append(b.forward_s if b.forward_s is not None else b.step_s)
        return {k: float(np.median(v)) for k, v in out.items()}
    pb, pn = per_size(base), per_size(new)
    sizes = sorted(set(pb) & set(pn))
    if len(sizes) < 2:
        return f", batch {sizes[0]}" if sizes else ""
    return "; by batch size " + ", ".join(f"{s}: {pct(pn[s], pb[s])}" for s in sizes)


def step_terms(base: Sequence[CellAnatomy], new: Sequence[CellAnatomy]) -> dict[str, tuple[float, str]]:
    """Each term of log(tok/s)'s change: (its change in log, its description)."""
    def m(get, runs):
        return median_of(runs, get)
    tb, tn = m(lambda a: a.tokens_per_step, base), m(lambda a: a.tokens_per_step, new)
    sb, sn = m(lambda a: a.step_s, base), m(lambda a: a.step_s, new)
    hb, hn = m(lambda a: a.host_s, base), m(lambda a: a.host_s, new)
    bb, bn = m(lambda a: a.busy_share, base), m(lambda a: a.busy_share, new)
    terms: dict[str, tuple[float, str]] = {}
    if tb and tn:
        terms["tokens"] = (math.log(tn / tb), f"tokens per step {pct(tn, tb)} ({tb:.3g} → {tn:.3g})")
    if sb and sn:
        step = -math.log(sn / sb)
        if hb is not None and hn is not None and sn != sb:
            host_part = (hn - hb) / (sn - sb)
            fb, fn = sb - hb, sn - hn
            terms["forward"] = (step * (1 - host_part), f"forward time per step {pct(fn, fb)} "
                                f"({fb * 1e3:.3g} → {fn * 1e3:.3g} ms{_forward_by_size(base, new)})")
            terms["host"] = (step * host_part, f"host time per step {pct(hn, hb)} ({hb * 1e3:.3g} → {hn * 1e3:.3g} ms; "
                             f"host share {hb / sb * 100:.1f} % → {hn / sn * 100:.1f} %)")
        else:
            terms["forward"] = (step, f"step time {pct(sn, sb)} ({sb * 1e3:.3g} → {sn * 1e3:.3g} ms"
                                      f"{_forward_by_size(base, new)})")
    if bb and bn:
        terms["busy"] = (math.log(bn / bb), f"time outside the engine's step {pct(1 - bn, 1 - bb) if bb < 1 else ''} "
                         f"(busy share {bb * 100:.1f} % → {bn * 100:.1f} %)")
    return terms


def causes(base: Sequence[CellAnatomy], new: Sequence[CellAnatomy], metric: str, ratio: float) -> list[Cause]:
    """The step terms that explain at least MIN_SHARE of the change, largest share first."""
    if metric not in ("tok_s", "tbt") or ratio <= 0 or ratio == 1:
        return []
    total = math.log(ratio) * (1 if metric == "tok_s" else -1)  # as a change in log(tok/s)
    out = [Cause(term / total, text) for term, text in step_terms(base, new).values()]
    return sorted((c for c in out if c.share >= MIN_SHARE), key=lambda c: -c.share)


def diagnose(base: Sequence[CellAnatomy], new: Sequence[CellAnatomy], metric: str, ratio: float,
             kernels: str | None = None) -> str:
    """The diagnosis in one line: ranked causes with their shares, where the step time moved (tail or typical
    step, ``inproc.history.tail``; tok/s and TBT), the kernel category it sits in, then the facts that moved
    (or stayed). ``kernels``: the kernel change in words, judged by the caller (None: judged here, this cell alone)."""
    if not base or not new:
        return "no step records to explain it (a cell without a window)"
    ranked = causes(base, new, metric, ratio)
    split = tail_split(base, new) if metric in ("tok_s", "tbt") else None
    parts = [f"{c.text}, {min(c.share, 9.99) * 100:.0f} % of the change" for c in ranked]
    parts += [tail_text(split)] if split is not None else []
    if kernels is None and metric in ("tok_s", "tbt"):
        kernels = kernel_diagnosis([a.kernels for a in base], [a.kernels for a in new])
    parts += [kernels] if kernels else []
    moved, unchanged = moved_facts(base, new)
    if metric == "ttft" and moved:  # TTFT is before the window: the window's facts are context, not causes
        moved[0] = "in the decode window after it: " + moved[0]
    parts += moved
    if not ranked and not moved and (split is None or split.where == UNCHANGED):
        unexplained = "unexplained by the step records" + (f" ({'; '.join(unchanged)})" if unchanged else "")
        return "; ".join([unexplained] + parts)  # parts: the unchanged step time's split, or none
    return "; ".join(parts + unchanged)
