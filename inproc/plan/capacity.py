"""Can a cell run in the engine's KV cache at all? Counted the way the engine allocates.

vLLM gives each request, in every KV-cache group, whole blocks from one shared pool. A
request's footprint changes as it runs, so two footprints are counted per group:

- **peak**: the most one request holds, while its prefill is in flight: ``ceil(tokens /
  block_size)`` for full attention and MLA; for a sliding window or chunked local
  attention the engine's own admission cap (``max_admission_blocks_per_request``: the
  window plus a prefill chunk in flight); a Mamba state's fixed pages.
- **steady**: the least one request holds at any decode step once past its prefill. A
  group that keeps every token holds them all (steady = peak); a sliding window of ``w``
  tokens keeps the ``w`` tokens the next token attends to, at least ``ceil(w /
  block_size)`` blocks (vLLM frees blocks that leave the window as the request
  advances); a local-attention chunk keeps at least the block of the next token; a
  Mamba state keeps its pages.

A cell is **Over capacity** only when it provably cannot run: its C requests exceed the
pool even at their steady footprints, or one request alone cannot fit at its peak.
Every other cell runs and the engine decides (it may keep requests waiting or preempt
them while their prefills pass their peaks: the cell is then Requests queued). Where
every group keeps every token (full attention, MLA) steady = peak, so the boundary is
the exact one.

In ``shared`` prompt mode the full blocks of the common context are allocated once and
shared through the prefix cache (groups that keep every token only); the partial last
block and everything after it are per request. vLLM's pool gives its first block to
nobody (the null block), so requests can hold ``num_blocks - 1``; its logged max
concurrency divides all ``num_blocks``. SGLang's pools are groups with ``block_size`` =
its page size; its hybrid sliding-window pool is a group with a pool of its own
(``KVCacheGroup.pool_blocks``). The rule of the benchmark behind the published matrices
(docs/reference-matrices.md), C × (L + M) tokens against the pool, is kept beside it.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc.types import Capacity, KVCacheGroup

#: Group kinds that keep a bounded span of tokens (the window or the attention chunk).
WINDOWED = ("sliding_window", "chunked_local_attention")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def keeps_every_token(group: KVCacheGroup) -> bool:
    """Whether a group holds a block for every token (full attention, MLA, SGLang's token pool)."""
    return group.kind != "mamba" and group.kind not in WINDOWED and not group.sliding_window


def group_blocks(group: KVCacheGroup, tokens: int) -> int:
    """Blocks one sequence of ``tokens`` holds in ``group`` at its peak.

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


def steady_group_blocks(group: KVCacheGroup, tokens: int) -> int:
    """Blocks one sequence of ``tokens`` holds in ``group`` at the least, at any decode step.

    A sliding window keeps the ``w`` tokens the next token attends to (at least ``ceil(w /
    block_size)`` blocks, whatever the window's alignment); a local-attention chunk keeps
    at least the block the next token goes into; everything else holds its peak.
    """
    if group.kind == "mamba" or keeps_every_token(group):
        return group_blocks(group, tokens)
    blocks = _cdiv(tokens, group.block_size)
    if group.kind == "chunked_local_attention":
        return min(blocks, 1)
    return min(blocks, _cdiv(group.sliding_window or tokens, group.block_size))


def blocks_per_sequence(capacity: Capacity, tokens: int) -> int:
    """Blocks of the shared pool one sequence of ``tokens`` holds at its peak, summed over groups."""
    return sum(group_blocks(g, tokens) for g in capacity.groups if g.pool_blocks is None)


@dataclass(frozen=True)
class PoolNeed:
    """What C requests of one cell need of one pool, and what the pool has."""

    steady_blocks: int  # C × steady footprint (+ a shared context once): decides Over capacity
    peak_blocks: int  # C × peak footprint: if every request held its peak at once (the old, strict rule)
    request_peak_blocks: int  # one request at its peak
    available: int


def pool_need(groups: tuple[KVCacheGroup, ...], available: int, seq: int, concurrency: int,
              shared_prefix: int) -> PoolNeed:
    """Blocks C sequences of ``seq`` tokens need of one pool, steady and at peak."""
    shared = {g: shared_prefix // g.block_size if keeps_every_token(g) else 0 for g in groups}
    once = sum(shared.values())
    steady = sum(steady_group_blocks(g, seq) - shared[g] for g in groups)
    peak = sum(group_blocks(g, seq) - shared[g] for g in groups)
    return PoolNeed(once + concurrency * steady, once + concurrency * peak, sum(group_blocks(g, seq) for g in groups),
                    available)


@dataclass(frozen=True)
class CapacityCheck:
    """The KV arithmetic of one cell, kept in its record.

    ``blocks_needed`` is what decides: the blocks C requests hold at their steady decode
    footprints (records before this rule hold the peak count there). ``fits`` is False
    only where the cell provably cannot run. ``peak_blocks_needed`` and
    ``request_peak_blocks`` are the static estimates shown beside observed KV usage.
    """

    fits: bool
    blocks_needed: int
    blocks_available: int
    tokens_needed: int  # blocks_needed × block size
    tokens_available: int
    reference_tokens_needed: int  # C × (L + M), the published matrices' rule (docs/reference-matrices.md)
    reference_fits: bool
    peak_blocks_needed: int | None = None  # C × peak footprint (None: a record made before it was counted)
    request_peak_blocks: int | None = None  # one request at its peak
    window_pool: PoolNeed | None = None  # SGLang's hybrid sliding-window pool, where the engine has one

    def reason(self) -> str:
        """Why the cell cannot run: the pool the footprints do not fit."""
        if self.request_peak_blocks is not None and self.request_peak_blocks > self.blocks_available:
            return (f"one request needs {self.request_peak_blocks:,} KV blocks at its peak (prefill in flight), "
                    f"the engine has {self.blocks_available:,} ({self.tokens_available:,} tokens)")
        w = self.window_pool
        if w is not None and (w.steady_blocks > w.available or w.request_peak_blocks > w.available):
            return (f"needs {w.steady_blocks:,} sliding-window pool blocks even at the steady decode footprint "
                    f"(one request at its peak {w.request_peak_blocks:,}), the engine's window pool has {w.available:,}")
        return (
            f"needs {self.blocks_needed:,} KV blocks ({self.tokens_needed:,} tokens) even at the steady decode "
            f"footprint, the engine has {self.blocks_available:,} ({self.tokens_available:,} tokens)"
        )

    @classmethod
    def from_dict(cls, d: dict) -> "CapacityCheck":
        w = d.get("window_pool")
        return cls(**{**d, "window_pool": PoolNeed(**w) if w else None})


def check_cell(capacity: Capacity, context: int, concurrency: int, max_tokens: int, mode: str, shared_prefix: int) -> CapacityCheck:
    """Blocks C requests of ``context`` prompt + ``max_tokens`` output need, against the pool(s)."""
    seq = context + max_tokens
    shared = shared_prefix if mode == "shared" else 0
    available = capacity.allocatable_blocks
    main = pool_need(tuple(g for g in capacity.groups if g.pool_blocks is None), available, seq, concurrency, shared)
    own = [g for g in capacity.groups if g.pool_blocks is not None]
    window = pool_need(tuple(own), own[0].pool_blocks, seq, concurrency, 0) if own else None
    fits = main.steady_blocks <= available and main.request_peak_blocks <= available
    if window is not None:
        fits = fits and window.steady_blocks <= window.available and window.request_peak_blocks <= window.available
    ref = concurrency * seq
    return CapacityCheck(
        fits=fits,
        blocks_needed=main.steady_blocks,
        blocks_available=available,
        tokens_needed=main.steady_blocks * capacity.block_size,
        tokens_available=available * capacity.block_size,
        reference_tokens_needed=ref,
        reference_fits=ref <= capacity.kv_tokens,
        peak_blocks_needed=main.peak_blocks,
        request_peak_blocks=main.request_peak_blocks,
        window_pool=window,
    )


def max_concurrency_at_max_len(capacity: Capacity) -> float:
    """Requests of ``max_model_len`` tokens the pool holds (what vLLM logs as max concurrency)."""
    return capacity.num_blocks / blocks_per_sequence(capacity, capacity.max_model_len)
