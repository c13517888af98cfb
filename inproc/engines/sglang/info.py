"""What a built SGLang scheduler holds: capacity from its own accounting, identity, settings."""
from __future__ import annotations

from inproc.engines.sglang.anatomy import FORWARD_SOURCE
from inproc.engines.sglang.kernels import read_compute_dtype
from inproc.engines.sglang.nodes import placement
from inproc.types import Capacity, EngineInfo, EngineSettings, KVCacheGroup, special_token_ids

# Settings worth recording in a results file (resolved values, not the profile's).
#: Resolved ServerArgs shown beside the figures (EngineSettings.shown); the typed ones are set in read_info.
SETTING_NAMES = (
    "device", "attention_backend", "sampling_backend",
    "mem_fraction_static", "max_total_tokens", "max_running_requests", "chunked_prefill_size",
    "page_size", "schedule_policy", "disable_radix_cache",
    "speculative_num_steps", "load_format", "enable_deterministic_inference",
    "disable_overlap_schedule", "cuda_graph_backend_decode", "cuda_graph_bs_decode", "cuda_graph_max_bs_decode",
)


def read_info(s, server_args, model: str, event_loop: str) -> EngineInfo:
    """Capacity from the scheduler's own accounting; identity from SGLang and the HF config."""
    import sglang
    from sglang.srt.configs.model_config import AttentionArch

    mc = s.model_config
    page, kv_tokens, ctx = int(s.page_size), int(s.max_total_num_tokens), int(mc.context_len)
    kind = "mla" if mc.attention_arch == AttentionArch.MLA else "token_pool"
    layers = int(getattr(mc, "num_attention_layers", None) or mc.num_hidden_layers)
    resolved = server_args.resolved_dict()
    extra = {
        "kv_available_tokens": int(s.token_to_kv_pool_allocator.available_size()),
        "radix_evictable_tokens": int(s.tree_cache.evictable_size()),
        "max_req_input_len": int(s.max_req_input_len),
        "kv_allocator": type(s.token_to_kv_pool_allocator).__name__,
        "tree_cache": type(s.tree_cache).__name__,
        "prefix_caching": not s.disable_radix_cache,  # SGLang's radix cache
    }
    groups = [KVCacheGroup(kind, page, layers)] + ([window_pool_group(s, page)] if s.is_hybrid_swa else [])
    if s.is_hybrid_swa:
        extra["sliding_window_size"] = int(s.sliding_window_size)
    capacity = Capacity(
        num_blocks=kv_tokens // page,
        block_size=page,
        kv_tokens=kv_tokens,
        groups=tuple(groups),
        max_num_seqs=int(s.max_running_requests),
        max_num_batched_tokens=int(s.chunked_prefill_size) if s.chunked_prefill_size else None,
        max_model_len=ctx,
        # SGLang has no such function; this is its pool over its context length.
        engine_max_concurrency=kv_tokens / ctx,
        extra=extra,
    )
    return EngineInfo(
        name="sglang",
        version=str(sglang.__version__),
        model=model,
        dummy_weights=str(resolved.get("load_format")) == "dummy",
        capacity=capacity,
        vocab_size=int(mc.vocab_size),
        special_token_ids=special_token_ids(mc.hf_config),
        settings=settings(s, resolved, mc, event_loop),
        forward_source=FORWARD_SOURCE,
        placement=placement(server_args, str(s.device)),
    )


def settings(s, resolved: dict, mc, event_loop: str) -> EngineSettings:
    """The resolved ServerArgs inproc reads, and the compute dtype of the model's layers (kernels.py)."""
    compute, compute_source = read_compute_dtype(s, str(getattr(mc, "dtype", None) or resolved.get("dtype") or ""))
    return EngineSettings(
        dtype=resolved.get("dtype"), quantization=resolved.get("quantization"),
        kv_cache_dtype=resolved.get("kv_cache_dtype"), tensor_parallel_size=resolved.get("tp_size"),
        speculative_method=resolved.get("speculative_algorithm"),
        num_speculative_tokens=resolved.get("speculative_num_draft_tokens"), event_loop=event_loop,
        graph_capture_memory_bytes=graph_memory_bytes(s), compute_dtype=compute,
        compute_dtype_source=compute_source, shown={k: resolved.get(k) for k in SETTING_NAMES})


def window_pool_group(s, page: int) -> KVCacheGroup:
    """SGLang's hybrid sliding-window pool: the sliding layers' own pool of ``swa_tokens_per_layer``.

    A request holds the window there once decoding; during a prefill chunk it also holds the
    chunk's tokens (freed out of the window after it), so its peak is the window + a chunk.
    """
    window = int(s.sliding_window_size)
    # Chunked prefill off (size <= 0): a whole prompt may be in flight.
    chunk = int(s.chunked_prefill_size) if (s.chunked_prefill_size or 0) > 0 else int(s.model_config.context_len)
    return KVCacheGroup("sliding_window", page, 0, window, max_blocks=-(-(window + chunk) // page),
                        pool_blocks=int(s.swa_tokens_per_layer) // page)


def graph_memory_bytes(s) -> int | None:
    """The device memory CUDA-graph capture took, summed over phases as SGLang's scheduler reports
    it (``graph_memory_usage`` of its workers, in GiB); None when nothing was captured (0 reported)."""
    from sglang.srt.model_executor.graph_memory_usage import merge_graph_memory_usage

    draft = getattr(s, "draft_worker", None)
    usage = merge_graph_memory_usage(getattr(s.tp_worker, "graph_memory_usage", None),
                                     getattr(draft, "graph_memory_usage", None) if draft is not None else None)
    total_gib = sum(usage.values())
    return int(total_gib * 2**30) if total_gib > 0 else None
