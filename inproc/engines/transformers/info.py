"""What a built transformers continuous-batching engine holds: its pool, limits, identity and settings."""
from __future__ import annotations

from inproc.engines.transformers import kv
from inproc.engines.transformers.args import TransformersArgs, block_field, config_fields
from inproc.types import Capacity, EngineInfo, EngineSettings, Placement, special_token_ids

#: Resolved ContinuousBatchingConfig fields shown beside the figures (besides the block field).
SHOWN = ("num_blocks", "max_batch_tokens", "max_requests_per_batch", "max_blocks_per_request", "allow_block_sharing",
         "use_async_batching", "use_cuda_graph", "q_padding_interval_size", "kv_padding_interval_size",
         "default_compile_level", "scheduler_type", "safety_margin", "cpu_offload_space", "max_memory_percent")


def read_info(manager, processor, args: TransformersArgs, on_cuda: bool) -> EngineInfo:
    """Capacity from the built cache and scheduler; the resolved config as the engine keeps it."""
    import transformers

    cache, cb = processor.cache, manager.continuous_batching_config
    hf = manager.model.config.get_text_config()
    num_blocks, size = int(cache.num_blocks), kv.block_size(cache)
    max_len = args.max_model_len or int(getattr(hf, "max_position_embeddings", 0) or 0)
    capacity = Capacity(
        num_blocks=num_blocks, block_size=size, kv_tokens=num_blocks * size,
        groups=kv.groups(cache, int(hf.num_hidden_layers)),
        max_num_seqs=int(processor.scheduler.max_requests_per_batch),
        max_num_batched_tokens=int(cache.max_batch_tokens), max_model_len=max_len,
        extra={"prefix_caching": bool(cache.use_prefix_sharing), "scheduler": type(processor.scheduler).__name__,
               "safety_margin": float(processor.scheduler.safety_margin)})
    shown = {f: _plain(getattr(cb, f, None)) for f in (block_field(), *SHOWN) if f in config_fields()}
    ran = str(manager.model.config._attn_implementation)  # after the engine's own switch, if it made one
    shown.update(device=str(manager.model.device), attn_implementation=ran, load_format=args.load_format,
                 sampling=sampling_line(manager.generation_config), seed=_plain(getattr(cb, "seed", None)))
    if ran != args.attn_implementation:
        shown["attn_switched_from"] = args.attn_implementation
    settings = EngineSettings(dtype=str(manager.model.dtype).removeprefix("torch."), tensor_parallel_size=1,
                              async_scheduling=False, compute_dtype=str(manager.model.dtype).removeprefix("torch."),
                              compute_dtype_source="the model's dtype (unquantized)", shown=shown)
    return EngineInfo(name="transformers", version=str(transformers.__version__), model=args.model,
                      dummy_weights=args.load_format == "dummy", capacity=capacity, vocab_size=int(hf.vocab_size),
                      special_token_ids=special_token_ids(hf), settings=settings, forward_source="",
                      placement=Placement(1, 1, ((0,),), 1 if on_cuda else 0, "uni"))


def sampling_line(gen) -> str:
    """The sampler as the engine's generation config holds it (one for every request)."""
    eos = gen.eos_token_id
    stop = "none" if eos in (None, -1) else str(eos)
    if not gen.do_sample:
        return f"greedy (do_sample off), EOS {stop} where a request does not ignore it, for every request"
    top_k = "off" if not gen.top_k else str(gen.top_k)
    top_p = "off" if gen.top_p is None or gen.top_p >= 1.0 else f"{gen.top_p:g}"
    return (f"sampled at temperature {gen.temperature:g}, top-k {top_k}, top-p {top_p}, EOS {stop} where a request "
            f"does not ignore it, for every request")


def _plain(value: object) -> object:
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)
