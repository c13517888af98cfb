"""Will a cell fit in the engine's KV cache? Counted the way the engine allocates.

vLLM gives each request, in every KV-cache group, whole blocks from one shared pool:
``ceil(tokens / block_size)`` for full attention and MLA, and for a sliding window only
the blocks the window can touch. In ``shared`` prompt mode the full blocks of the common
context are allocated once and shared through the prefix cache; the partial last block
and everything after it are per request. SGLang's token pool is a group with
``block_size`` = its page size, counted the same way.

The reference tool's rule, C × (L + M) tokens against the pool, is kept beside it.
vLLM's pool gives its first block to nobody (the null block), so requests can hold
``num_blocks - 1``; its logged max concurrency divides all ``num_blocks``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from inproc.types import Capacity, KVCacheGroup


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def group_blocks(group: KVCacheGroup, tokens: int) -> int:
    """Blocks one sequence of ``tokens`` holds in ``group`` at its longest."""
    if group.sliding_window:
        # A window of w tokens spans at most ceil((w - 1) / B) + 1 blocks once it slides.
        return min(_cdiv(tokens, group.block_size), _cdiv(group.sliding_window - 1, group.block_size) + 1)
    return _cdiv(tokens, group.block_size)


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

    def to_dict(self) -> dict:
        return asdict(self)


def check_cell(capacity: Capacity, context: int, concurrency: int, max_tokens: int, mode: str, shared_prefix: int) -> CapacityCheck:
    """Blocks needed by C requests of ``context`` prompt + ``max_tokens`` output, against the pool."""
    seq = context + max_tokens
    if mode == "shared" and shared_prefix > 0:
        shared_full = {g: 0 if g.sliding_window else shared_prefix // g.block_size for g in capacity.groups}
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
