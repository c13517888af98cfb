"""Statuses of measured cells, each with its reason and the checks it passed."""
from __future__ import annotations

from dataclasses import dataclass

from inproc import types as st
from inproc.types import Capacity
from inproc.measure.figures import DecodeFigures, PrefillFigures
from inproc.plan.capacity import CapacityCheck

#: A cell is "Requests queued" when the scheduler's time-weighted running count over the
#: window is below this fraction of C, or when any step of the window had a waiting request.
QUEUED_ACTIVE_FRACTION = 0.9


@dataclass(frozen=True)
class Verdict:
    """A status, the reason for it, and the checks the entry passed."""

    status: str
    reason: str
    checks_passed: tuple[str, ...]


def judge_prefill(fig: PrefillFigures) -> Verdict:
    """A cold prefill is Valid only if the engine served nothing from its prefix cache."""
    if fig.cached_tokens or fig.prefix_hits:
        return Verdict(
            st.ERROR,
            f"prefill was not cold: {fig.cached_tokens} cached prompt tokens, {fig.prefix_hits} prefix-cache hit tokens",
            (),
        )
    return Verdict(st.VALID, "", ("cold_cache",))


def queued_reason(fig: DecodeFigures, concurrency: int, capacity: Capacity,
                  estimate: CapacityCheck | None = None) -> str:
    """Why requests waited, from the engine's limits and counters; "" if they did not.

    The KV figures follow: the blocks the engine held over the window and the plan's
    static estimate (C requests at their steady footprints, and at their peaks).
    """
    low = fig.avg_active < QUEUED_ACTIVE_FRACTION * concurrency
    if not (low or fig.max_waiting > 0 or fig.preemptions):
        return ""
    causes = []
    if concurrency > capacity.max_num_seqs:
        causes.append(f"max_num_seqs={capacity.max_num_seqs} < C={concurrency}")
    if fig.preemptions:
        causes.append(f"KV cache preemption ({fig.preemptions} preemptions in the window)")
    seen = f"up to {fig.max_waiting} waiting, {fig.avg_active:.2f} of {concurrency} running on average"
    return "; ".join([*causes, seen, *kv_figures(fig, estimate)])


def kv_figures(fig: DecodeFigures, estimate: CapacityCheck | None) -> list[str]:
    """The observed KV usage and the plan's estimate, as reason parts (none where unknown)."""
    parts = [fig.kv.describe()] if fig.kv is not None else []
    if estimate is not None and estimate.peak_blocks_needed is not None:
        parts.append(f"estimate {estimate.blocks_needed:,} blocks at the steady decode footprint, "
                     f"{estimate.peak_blocks_needed:,} if all C held their peak at once")
    return parts


def judge_decode(fig: DecodeFigures | None, concurrency: int, capacity: Capacity, looped: str = "",
                 throttle_passed: bool | None = None, estimate: CapacityCheck | None = None) -> Verdict:
    """Valid, Requests queued or Looped for a measured decode cell.

    ``looped``: the loop detector's reason ("" when no request looped). ``throttle_passed``:
    the telemetry throttle check (None: not judged); a throttled cell keeps its status and
    is flagged, so the check only adds ``not_throttled`` to the checks passed. ``estimate``:
    the plan's KV arithmetic of the cell, quoted in a Requests queued reason.
    """
    if fig is None:
        return Verdict(st.ERROR, "the decode window held no engine step (a window of seconds ends before its first "
                                 "step that ends past it: give a --duration longer than a step, or --window-steps)", ())
    throttle = ("not_throttled",) if throttle_passed else ()
    if looped:
        return Verdict(st.LOOPED, looped, throttle)
    why = queued_reason(fig, concurrency, capacity, estimate)
    if why:
        return Verdict(st.QUEUED, why, ("no_loop", *throttle))
    return Verdict(st.VALID, "", ("no_loop", "all_requests_running", *throttle))
