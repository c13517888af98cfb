"""What a built vLLM engine holds: capacity from its own KV-cache config, identity, settings."""
from __future__ import annotations

from inproc.engines.vllm.graphs import CaptureMemory
from inproc.engines.vllm.kernels import read_compute_dtype
from inproc.engines.vllm.nodes import placement
from inproc.types import Capacity, EngineInfo, EngineSettings, KVCacheGroup, special_token_ids

#: How the adapter's per-step bytes and FLOPs are obtained (recorded with every run).
FORWARD_SOURCE = ("vLLM's own accounting: CUDAGraphStat (--cudagraph-metrics) and PerfStats "
                  "(--enable-mfu-metrics, vllm/v1/metrics/perf.py) of each batch")


def group_kind(spec) -> tuple[str, int | None]:
    """The kind of a ``KVCacheSpec`` and its window (sliding window or attention chunk), if any."""
    name = type(spec).__name__
    window = getattr(spec, "sliding_window", None)
    if window and "SlidingWindow" in name:  # SlidingWindowMLASpec too (DeepSeek-V4's window and state groups)
        return "sliding_window", int(window)
    if "MLA" in name:
        return "mla", None
    if window:
        return "sliding_window", int(window)
    if "Chunked" in name:
        return "chunked_local_attention", getattr(spec, "attention_chunk_size", None)
    if "Mamba" in name:
        return "mamba", None
    return "full_attention", None


def max_blocks_per_request(spec, cfg, kind: str) -> int | None:
    """The spec's own per-request cap: ``max_admission_blocks_per_request`` where the spec has it.

    vLLM 0.32 calls it "the single source of truth for both startup pool sizing and the
    runtime admission gate" (sliding window, chunked local attention); it is asked with the
    engine's own ``max_in_flight_tokens``. A Mamba state takes a fixed number of pages.
    """
    if kind == "mamba":
        return -(-int(spec.max_memory_usage_bytes(cfg)) // int(spec.page_size_bytes))
    cap = getattr(spec, "max_admission_blocks_per_request", None)
    if cap is None:
        return None
    return int(cap(cfg.max_in_flight_tokens, cfg.model_config.max_model_len))


def read_info(llm_engine, scheduler, model: str, graphs: CaptureMemory | None = None) -> EngineInfo:
    """Capacity from the scheduler's KV-cache config and vLLM's own max-concurrency function."""
    import vllm
    from vllm.v1.core.kv_cache_utils import get_max_concurrency_for_kv_cache_config

    cfg = llm_engine.vllm_config
    kv = scheduler.kv_cache_config
    groups = []
    for g in kv.kv_cache_groups:
        kind, window = group_kind(g.kv_cache_spec)
        groups.append(KVCacheGroup(kind, int(g.kv_cache_spec.block_size), len(g.layer_names), window,
                                   max_blocks_per_request(g.kv_cache_spec, cfg, kind)))
    block_size = int(cfg.cache_config.block_size)
    capacity = Capacity(
        num_blocks=int(kv.num_blocks),
        block_size=block_size,
        kv_tokens=int(kv.num_blocks) * block_size,
        groups=tuple(groups),
        max_num_seqs=int(cfg.scheduler_config.max_num_seqs),
        max_num_batched_tokens=int(cfg.scheduler_config.max_num_batched_tokens),
        max_model_len=int(cfg.model_config.max_model_len),
        engine_max_concurrency=float(get_max_concurrency_for_kv_cache_config(cfg, kv)),
        extra={"prefix_caching": bool(cfg.cache_config.enable_prefix_caching)},
        # The block pool hands its first block out as the null block, never to a request.
        usable_blocks=int(kv.num_blocks) - 1,
    )
    return EngineInfo(
        name="vllm",
        version=str(vllm.__version__),
        model=model,
        dummy_weights=str(cfg.load_config.load_format) == "dummy",
        capacity=capacity,
        vocab_size=int(cfg.model_config.get_vocab_size()),
        special_token_ids=special_token_ids(cfg.model_config.hf_config),
        settings=settings(cfg, graphs or CaptureMemory(), read_compute_dtype(llm_engine, str(cfg.model_config.dtype))),
        forward_source=FORWARD_SOURCE,
        placement=placement(cfg.parallel_config),
    )


def settings(cfg, graphs: CaptureMemory, compute: tuple[str, str] = (None, None)) -> EngineSettings:
    """The resolved settings (after vLLM's platform hooks); what graph capture took, as
    capture_model() returned it, and its wall time (inproc.engines.vllm.graphs); the sizes
    captured (none when the resolved mode captures nothing); the compute dtype and its
    source (inproc.engines.vllm.kernels)."""
    spec, comp = cfg.speculative_config, cfg.compilation_config
    return EngineSettings(
        dtype=str(cfg.model_config.dtype).removeprefix("torch."),
        quantization=cfg.model_config.quantization,
        kv_cache_dtype=cfg.cache_config.cache_dtype,
        tensor_parallel_size=cfg.parallel_config.tensor_parallel_size,
        speculative_method=getattr(spec, "method", None) if spec else None,
        num_speculative_tokens=getattr(spec, "num_speculative_tokens", None) if spec else None,
        async_scheduling=bool(cfg.scheduler_config.async_scheduling),
        graph_capture_memory_bytes=graphs.bytes,
        graph_capture_s=graphs.seconds,
        graph_capture_sizes=captured_sizes(comp),
        compute_dtype=compute[0],
        compute_dtype_source=compute[1],
        shown={
            "enable_expert_parallel": bool(cfg.parallel_config.enable_expert_parallel),
            "enforce_eager": bool(cfg.model_config.enforce_eager),
            "cudagraph_mode": str(comp.cudagraph_mode) if comp.cudagraph_mode is not None else None,
            "cudagraph_capture_sizes": list(comp.cudagraph_capture_sizes or []),
            "max_cudagraph_capture_size": comp.max_cudagraph_capture_size,
            "enable_chunked_prefill": bool(cfg.scheduler_config.enable_chunked_prefill),
        },
    )


def captured_sizes(comp) -> tuple[int, ...]:
    """The token counts vLLM captures graphs for: its resolved ``cudagraph_capture_sizes`` (sorted,
    rounded by vLLM to what the mode needs), none when its resolved ``cudagraph_mode`` is NONE."""
    mode = getattr(comp, "cudagraph_mode", None)
    if mode is not None and str(mode).rsplit(".", 1)[-1] == "NONE":
        return ()
    return tuple(int(s) for s in comp.cudagraph_capture_sizes or ())
