"""``inproc profile check`` and placement for transformers: one process, one device, no worker nodes."""
from __future__ import annotations

from inproc.engines.base import CheckSkipped
from inproc.errors import UsageError
from inproc.types import Placement


def parallel_layout(args) -> tuple[int, str]:
    """One device: inproc builds transformers' continuous batching without tensor parallelism."""
    return (0 if args.device == "cpu" else 1), "TP 1"


def argument_checks(args, explicit: set[str]) -> str:
    """The fields the profile sets, through ContinuousBatchingConfig's own constructor."""
    args.cb_config()
    return "ContinuousBatchingConfig(...) with the profile's fields"


def engine_config_check(args, gpus: int) -> str:
    """The model's config.json as transformers reads it (its layers by attention type, which set the cache's
    allocators); what only the build resolves (a pool sized from free memory) is said, and an attention
    switch the profile asked for is warned of."""
    import os

    if not os.path.isdir(args.model):
        raise CheckSkipped("the model is a Hugging Face id: transformers reads its config.json when the engine is built")
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(args.model).get_text_config()
    except (OSError, ValueError, KeyError) as e:
        raise UsageError(f"transformers cannot read the model's config.json: {' '.join(str(e).split())}") from None
    cb = args.cb_config()
    kinds = getattr(config, "layer_types", None) or ["full_attention"] * int(config.num_hidden_layers)
    counts = ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds))
    parts = [f"config.json: {config.num_hidden_layers} layers ({counts})"]
    parts.append(f"pool of {cb.num_blocks} blocks" if cb.num_blocks else
                 "pool sized from free memory when the engine is built (not checked here)")
    if getattr(cb, "auto_switch_to_flash", False) and "auto_switch_to_flash" in args.cb_fields:
        parts.append(f"warning: auto-switch-to-flash = true: transformers may run a flash attention instead of "
                     f"{args.attn_implementation} (the header's attn_implementation says what ran)")
    return "; ".join(parts)


def placement(args) -> Placement:
    on_gpu = args.device != "cpu"
    return Placement(1, 1, ((0,),), 1 if on_gpu else 0, "uni")


def check_head(args) -> None:
    """One node only."""


def run_worker(launch, node_rank: int, echo) -> int:
    raise UsageError("transformers' continuous batching runs on one node: there is no `inproc worker` for it.")
