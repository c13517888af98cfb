"""Will a cell fit in the engine's KV cache? Counted the way the engine allocates.

vLLM gives each request, in every KV-cache group, whole blocks from one shared pool:
``ceil(tokens / block_size)`` for full attention and MLA, capped for a sliding window or
chunked local attention by the engine's own per-request cap (the window plus the tokens in
flight), and a Mamba state's fixed pages. In ``shared`` prompt mode the full blocks of the common
context are allocated once and shared through the prefix cache; the partial last block
and everything after it are per request. SGLang's token pool is a group with
``block_size`` = its page size, counted the same way.

The reference tool's rule, C × (L + M) tokens against the pool, is kept beside it.
vLLM's pool gives its first block to nobody (the null block), so requests can hold
``num_blocks - 1``; its logged max concurrency divides all ``num_blocks``.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc.types import Capacity, KVCacheGroup


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def group_blocks(group: KVCacheGroup, tokens: int) -> int:
    """Blocks one sequence of ``tokens`` holds in ``group`` at its longest.

    Whole blocks, capped by the engine's own per-request cap where its KV spec has one
    (``KVCacheGroup.max_blocks``: a sliding window or attention chunk plus the tokens of a
    prefill chunk in flight); a Mamba state holds its fixed pages whatever the length.
    Records made before the cap was read fall back to the window alone.
    """
    if group.kind == "mamba":
        return group.max_blocks or 1
    blocks = _cdiv(tokens, group.block_size)
    if group.max_blocks is not None:
        return min(blocks, group.max_blocks)
    if group.sliding_window:
        return min(blocks, _cdiv(group.sliding_window - 1, group.block_size) + 1)
    return blocks


def blocks_per_sequence(capacity: Capacity, tokens: int) -> int:
    """Blocks of the shared pool one sequence of ``tokens`` holds, summed over groups."""
    return sum(group_blocks(g, tokens) for g in capacity.groups)


@dataclass(frozen=True)
class CapacityCheck:
    """The KV arithmetic of one cell, kept in its record."""

    fits: bool
    blocks_needed: int
    blocks_available: int
    tokens_needed: int  # blocks_needed × block size
    tokens_available: int
    reference_tokens_needed: int  # C × (L + M), the reference tool's rule
    reference_fits: bool

    def reason(self) -> str:
        return (
            f"needs {self.blocks_needed:,} KV blocks ({self.tokens_needed:,} tokens) for the cell, "
            f"the engine has {self.blocks_available:,} ({self.tokens_available:,} tokens)"
        )


def check_cell(capacity: Capacity, context: int, concurrency: int, max_tokens: int, mode: str, shared_prefix: int) -> CapacityCheck:
    """Blocks needed by C requests of ``context`` prompt + ``max_tokens`` output, against the pool."""
    seq = context + max_tokens
    if mode == "shared" and shared_prefix > 0:
        # Only groups that keep every token share a context's full blocks through the prefix cache.
        keeps_all = lambda g: not (g.sliding_window or g.max_blocks is not None or g.kind == "mamba")  # noqa: E731
        shared_full = {g: shared_prefix // g.block_size if keeps_all(g) else 0 for g in capacity.groups}
        once = sum(shared_full.values())
        each = sum(group_blocks(g, seq) - shared_full[g] for g in capacity.groups)
        needed = once + concurrency * each
    else:
        needed = concurrency * blocks_per_sequence(capacity, seq)
    ref = concurrency * seq
    available = capacity.allocatable_blocks
    return CapacityCheck(
        fits=needed <= available,
        blocks_needed=needed,
        blocks_available=available,
        tokens_needed=needed * capacity.block_size,
        tokens_available=available * capacity.block_size,
        reference_tokens_needed=ref,
        reference_fits=ref <= capacity.kv_tokens,
    )


def max_concurrency_at_max_len(capacity: Capacity) -> float:
    """Requests of ``max_model_len`` tokens the pool holds (what vLLM logs as max concurrency)."""
    return capacity.num_blocks / blocks_per_sequence(capacity, capacity.max_model_len)
