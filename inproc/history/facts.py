"""The anatomy facts of a cell that moved between two groups of runs (the diagnosis names them).

Each fact is the median over a group's runs; a fact counts as moved beyond the limits
below, chosen above this project's run-to-run spread on them (a fraction: a share of the
steps or of the tokens; a relative change: a time, clock, power or byte count).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from inproc.record.compact import CellAnatomy

SHARE_POINTS = 0.05  # graph-mode share, padding waste, spec acceptance: 5 points of the steps/tokens
RELATIVE = 0.03  # clocks, power, bytes and FLOPs per token, CPU use: 3 %
QUEUE = 0.5  # mean requests waiting
ACCEPTANCE_LENGTH = 0.1  # tokens per verify step: a change in speculative decoding's mean acceptance length


def _median(runs: Sequence[CellAnatomy], get: Callable[[CellAnatomy], float | None]) -> float | None:
    values = [v for v in (get(a) for a in runs) if v is not None]
    return float(np.median(values)) if values else None


def _shares(runs: Sequence[CellAnatomy], get) -> dict[str, float]:
    keys = {k for a in runs for k in get(a)}
    return {k: float(np.median([get(a).get(k, 0.0) for a in runs])) for k in keys}


def _share_text(shares: dict) -> str:
    return ", ".join(f"{k} {v * 100:.0f} %" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v > 0) or "none"


def _graphs(base, new) -> str | None:
    gb, gn = _shares(base, lambda a: a.graph_step_share), _shares(new, lambda a: a.graph_step_share)
    if all(abs(gb.get(k, 0.0) - gn.get(k, 0.0)) < SHARE_POINTS for k in set(gb) | set(gn)):
        return None
    return f"steps ran {_share_text(gn)} (was {_share_text(gb)})"


def _batches(base, new) -> str | None:
    def hist(runs):
        total: dict[int, float] = {}
        for a in runs:
            n = sum(b.steps for b in a.batch_times) or 1
            for b in a.batch_times:
                total[b.size] = total.get(b.size, 0.0) + b.steps / n / len(runs)
        return total
    hb, hn = hist(base), hist(new)
    if all(abs(hb.get(k, 0.0) - hn.get(k, 0.0)) < SHARE_POINTS for k in set(hb) | set(hn)):
        return None
    text = lambda h: ", ".join(f"{k}: {v * 100:.0f} %" for k, v in sorted(h.items()) if v >= 0.005)
    return f"batch sizes {{{text(hn)}}} (was {{{text(hb)}}})"


def _points(label: str, get, base, new) -> str | None:
    b, n = _median(base, get), _median(new, get)
    if b is None or n is None or abs(n - b) < SHARE_POINTS:
        return None
    return f"{label} {n * 100:.1f} % (was {b * 100:.1f} %)"


def _acceptance_length(base, new) -> str | None:
    """Speculative decoding's mean acceptance length, when it moved: the tokens each verify step yields, so a
    cause of tok/s in its own right (forced lengths differ only where the user allowed spec.acceptance)."""
    b = _median(base, lambda a: a.spec_mean_acceptance_length)
    n = _median(new, lambda a: a.spec_mean_acceptance_length)
    if b is None or n is None or abs(n - b) < ACCEPTANCE_LENGTH:
        return None
    return f"spec acceptance length {n:.2f} (was {b:.2f}, {pct(n, b)})"


def pct(new: float, old: float) -> str:
    """A relative change as a signed percentage: "+14 %", "−3.2 %"."""
    change = (new / old - 1) * 100 if old else float("inf")
    digits = 0 if abs(change) >= 10 else 1
    return f"{'+' if change >= 0 else '−'}{abs(change):.{digits}f} %"


def _relative(label: str, get, base, new, show) -> tuple[str | None, bool]:
    """(line when moved, whether the fact was known on both sides); ``show`` formats a value with its unit."""
    b, n = _median(base, get), _median(new, get)
    if b is None or n is None or b == 0:
        return None, False
    if abs(n / b - 1) < RELATIVE:
        return None, True
    return f"{label} {show(n)} (was {show(b)}, {pct(n, b)})", True


def _queues(base, new) -> list[str]:
    out = []
    pb, pn = _median(base, lambda a: a.preemptions), _median(new, lambda a: a.preemptions)
    if pb is not None and pn is not None and pb != pn:
        out.append(f"preemptions {pn:g} (was {pb:g})")
    wb, wn = _median(base, lambda a: a.mean_waiting), _median(new, lambda a: a.mean_waiting)
    if abs((wn or 0) - (wb or 0)) >= QUEUE:
        out.append(f"requests waiting {wn:.1f} on average (was {wb:.1f})")
    kb, kn = _median(base, lambda a: a.kv_blocks), _median(new, lambda a: a.kv_blocks)
    if kb and kn and kb != kn:
        out.append(f"KV blocks {kn:g} (was {kb:g})")
    return out


def _throttle(base, new) -> str | None:
    tb, tn = _shares(base, lambda a: a.throttle_fraction), _shares(new, lambda a: a.throttle_fraction)
    if all(abs(tb.get(k, 0.0) - tn.get(k, 0.0)) < SHARE_POINTS for k in set(tb) | set(tn)):
        return None
    return f"throttled {_share_text(tn)} of the window (was {_share_text(tb)})"


def moved_facts(base: Sequence[CellAnatomy], new: Sequence[CellAnatomy]) -> tuple[list[str], list[str]]:
    """(facts that moved, each with its numbers; "host share unchanged"-style lines for key facts that did not)."""
    moved = [x for x in (_graphs(base, new), _batches(base, new),
                         _points("padding waste", lambda a: a.padding_waste, base, new),
                         _acceptance_length(base, new),
                         _points("spec acceptance", lambda a: a.spec_acceptance_rate, base, new)) if x]
    for label, get, show in (("bytes per token", lambda a: a.bytes_per_token, lambda v: f"{v:.3g}"),
                             ("FLOPs per token", lambda a: a.flops_per_token, lambda v: f"{v:.3g}"),
                             ("bandwidth", lambda a: a.bandwidth_peak_fraction, lambda v: f"{v * 100:.2g} % of peak"),
                             ("power", lambda a: a.power_w, lambda v: f"{v:.0f} W")):
        line, _ = _relative(label, get, base, new, show)
        moved += [line] if line else []
    moved += _queues(base, new)
    moved += [x for x in (_throttle(base, new),) if x]
    unchanged = []
    for label, get, show in (("SM clock", lambda a: a.sm_clock_mhz, lambda v: f"{v:.0f} MHz"),
                             ("CPU clock", lambda a: a.cpu_freq_mhz, lambda v: f"{v:.0f} MHz"),
                             ("engine process CPU", lambda a: a.process_cpu_pct, lambda v: f"{v:.0f} % of a core")):
        line, known = _relative(label, get, base, new, show)
        if line:
            moved.append(line)
        elif known and "clock" in label and "clocks unchanged" not in unchanged:
            unchanged.append("clocks unchanged")
    hb, hn = _median(base, lambda a: a.host_s and a.host_s / a.step_s), _median(new, lambda a: a.host_s and a.host_s / a.step_s)
    if hb is not None and hn is not None and abs(hn - hb) < SHARE_POINTS:
        unchanged.insert(0, "host share unchanged")
    return moved, unchanged
