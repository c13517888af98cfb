"""transformers' paged KV cache as inproc counts it: its groups, its pool, the blocks requests hold.

Two layouts are read, each by what the built cache has:

- up to 5.17: ``PagedAttentionCache.group_cache_managers`` (one per attention type), every group
  drawing ``block_size``-token blocks from one ``BlockManager`` of ``num_blocks``;
- from 5.18: ``PagedAttentionCache.cache_allocators`` (one per attention type) whose blocks are
  ``tokens_per_page`` tokens of every layer of that type, drawn from sectors of one pool;
  ``num_blocks`` is the cache's capacity in such whole-model blocks.

In both, a request's blocks are its entry in its group's ``block_table``: the blocks in use at a
step are the distinct block ids those tables hold (a block shared by several requests through the
prefix cache counts once; a freed block kept for prefix reuse is held by no request).
"""
from __future__ import annotations

from inproc.types import KVCacheGroup


def allocators(cache) -> list:
    """The cache's per-attention-type block allocators, whichever layout the version has."""
    found = getattr(cache, "cache_allocators", None)
    if found is not None:
        return list(found.values())
    return list(getattr(cache, "group_cache_managers", ()))


def block_size(cache) -> int:
    """Tokens per block: the cache's own ``block_size`` (5.17), else its full-attention allocator's page."""
    size = getattr(cache, "block_size", None)
    if size is None:
        size = min(int(a.tokens_per_page) for a in allocators(cache))
    return int(size)


def groups(cache, num_layers: int) -> tuple[KVCacheGroup, ...]:
    """One group per allocator: full attention keeps every token, a sliding window its window."""
    out = []
    for a in allocators(cache):
        window = getattr(a, "sliding_window", None)
        layers = len(getattr(a, "layer_indices", ())) or num_layers
        size = int(getattr(a, "tokens_per_page", None) or getattr(a, "block_size", None) or block_size(cache))
        out.append(KVCacheGroup("sliding_window" if window else "full_attention", size, layers,
                                int(window) if window else None))
    return tuple(out)


def used_blocks(cache) -> int:
    """Blocks requests hold now, in the unit of the cache's capacity (``cache.num_blocks``).

    5.17: the distinct ids in every group's block tables (one BlockManager, one id space).
    5.18 on: each allocator's block is ``tokens_per_page`` tokens of its own layers only, while
    ``num_blocks`` counts whole-model blocks (``page_size`` tokens of every layer). So the blocks
    held are summed as bytes over the allocators and given in whole-model blocks, rounded up: on a
    model with full and sliding-window layers, a count of allocator blocks would overstate the use.
    """
    found = getattr(cache, "cache_allocators", None)
    if found is None:
        return len({b for a in allocators(cache) for blocks in a.block_table.values() for b in blocks})
    held = sum(len({b for blocks in a.block_table.values() for b in blocks}) * a.bytes_per_block
               for a in found.values())
    return -(-held // whole_block_bytes(cache))


def whole_block_bytes(cache) -> int:
    """Bytes of one whole-model block (5.18 on): a page of ``tokens_per_page`` tokens for every layer, the
    page as the full-attention allocator lays it out (the unit ``PagedAttentionCache.num_blocks`` counts in)."""
    found = list(cache.cache_allocators.values())
    full = next((a for a in found if not getattr(a, "sliding_window", None)), found[0])
    return int(full.bytes_per_page) * sum(len(a.layer_indices) for a in found)


def blocks_of(cache, request_id: str) -> int:
    """Blocks one request holds (over its groups)."""
    return sum(len(a.block_table.get(request_id, ())) for a in allocators(cache))


def drop_prefix_cache(cache) -> None:
    """Forget every cached block (requests hold none: the caller checks the engine is idle)."""
    evict = getattr(cache, "evict_cached_blocks", None)
    if evict is not None:  # 5.18 on: the allocators' ledgers, then the sectors they no longer use
        evict()
        cache.pool.try_to_free_sectors()
        return
    manager = cache._block_manager  # 5.17: complete blocks are kept "initialized" under their hash
    manager._uninit_block_ids.extend(manager._init_block_ids)
    manager._init_block_ids.clear()
    manager._hash_to_id.clear()
    manager._id_to_block.clear()
