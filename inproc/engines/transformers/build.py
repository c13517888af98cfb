"""The model and its continuous-batching manager, built in this process from the profile.

The model comes from the profile's config.json with weights drawn at random (``load-format =
"dummy"``: no checkpoint, no hub), or from the folder's checkpoint (``auto``). The settings the
engine would quietly change are refused first, each in one line: CUDA graphs on a CPU (the engine
turns them off with a warning), an unknown scheduler (it falls back to FIFO), async batching
(its outputs come back one step late, through a second set of buffers inproc does not step yet).
"""
from __future__ import annotations

import logging

from inproc.engines.transformers.args import TransformersArgs
from inproc.errors import UsageError


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"device = {device!r} needs CUDA, and torch {torch.__version__} sees no CUDA device here. "
                         "Use device = \"cpu\" (or \"auto\").")
    return device


def check_settings(args: TransformersArgs, device: str) -> None:
    """One line for each setting the engine would otherwise change behind the profile's back."""
    from transformers.generation.continuous_batching.scheduler import SCHEDULER_MAPPING

    fields = args.cb_fields
    graphs = fields.get("use_cuda_graph")
    if not device.startswith("cuda") and (graphs is True or (isinstance(graphs, (list, tuple)) and any(graphs))):
        raise UsageError(f"use-cuda-graph = {graphs!r} needs a CUDA device; this engine runs on {device}. Set "
                         "use-cuda-graph = false (or leave it out) on a CPU.")
    scheduler = fields.get("scheduler_type")
    if scheduler is not None and scheduler not in SCHEDULER_MAPPING:
        raise UsageError(f"Unknown scheduler-type {scheduler!r}. transformers' schedulers: "
                         f"{', '.join(sorted(SCHEDULER_MAPPING))}.")
    if fields.get("use_async_batching"):
        raise UsageError("use-async-batching = true: inproc steps transformers' synchronous batching only (async "
                         "batching returns a batch's tokens one step later, through buffers it does not step yet). "
                         "Set use-async-batching = false.")


def build_model(args: TransformersArgs, device: str):
    """The model on ``device``: dummy weights from config.json (seeded), or the folder's checkpoint."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    dtype = getattr(torch, args.dtype, None)
    if not isinstance(dtype, torch.dtype):
        raise UsageError(f"Bad dtype {args.dtype!r}: a torch dtype name (bfloat16, float16, float32).")
    if args.load_format == "auto":
        return AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, attn_implementation=args.attn_implementation,
                                                    device_map=device).eval()
    config = AutoConfig.from_pretrained(args.model)
    torch.manual_seed(args.weights_seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=args.attn_implementation)
    return model.eval()


def generation_config(temperature: float, eos_token_id, max_new_tokens: int):
    """The engine's one sampler, for every request: greedy at temperature 0 (``do_sample`` off: the argmax), else
    sampled at ``temperature`` from the whole distribution (top-k and top-p off). The engine fixes its sampler when
    the manager is built (its logits processors, and with graphs or compile the sampling path captured), so a
    request at another temperature is refused (``engine.py``). ``eos_token_id``: the model's own; a request that
    ignores EOS passes -1 instead."""
    from transformers import GenerationConfig

    eos = -1 if eos_token_id is None else eos_token_id
    if temperature == 0:
        return GenerationConfig(do_sample=False, eos_token_id=eos, max_new_tokens=max_new_tokens)
    return GenerationConfig(do_sample=True, temperature=float(temperature), top_k=0, top_p=1.0, eos_token_id=eos,
                            max_new_tokens=max_new_tokens)


#: The sampling seed the engine is given when the profile sets none (vLLM's default too): without one
#: transformers draws a seed at random, and two runs with one plan would sample differently.
DEFAULT_SEED = 0


def resolved_config(args: TransformersArgs):
    """The profile's ContinuousBatchingConfig with inproc's defaults where the profile says nothing: synchronous
    batching, the sampling seed, and the profile's attention kept (no switch to flash behind its back)."""
    cb = args.cb_config()
    if cb.use_async_batching is None:
        cb.use_async_batching = False  # left to the engine it may turn async on (a CUDA device)
    if getattr(cb, "seed", DEFAULT_SEED) is None:
        cb.seed = DEFAULT_SEED
    if "auto_switch_to_flash" not in args.cb_fields and hasattr(cb, "auto_switch_to_flash"):
        cb.auto_switch_to_flash = False
    return cb


def build_manager(args: TransformersArgs, temperature: float):
    """(manager, batch processor, on CUDA): the engine's loop objects, no background thread started; its sampler
    at ``temperature``."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    logging.getLogger("ContinuousBatchingLogger").setLevel(logging.ERROR)
    device = resolve_device(args.device)
    check_settings(args, device)
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    model = build_model(args, device)
    cb = resolved_config(args)
    gen = generation_config(temperature, model.config.get_text_config().eos_token_id, 16)
    manager = model.init_continuous_batching(generation_config=gen, continuous_batching_config=cb)
    processor = manager._create_batch_processor()
    manager.batch_processor = processor  # what the engine's own loop registers; _generation_step reads it
    if getattr(manager.continuous_batching_config, "use_async_batching", False):
        raise UsageError("transformers resolved use-async-batching to true; set use-async-batching = false.")
    if processor.model_runner.pad_inputs:  # graphs or compile: captured before the first step, as generate_batch does
        manager.warmup()
    return manager, processor, device.startswith("cuda")
