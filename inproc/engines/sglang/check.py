"""``inproc profile check`` for SGLang: argument-level rules, and the full resolution.

SGLang resolves its arguments in one pipeline (``ServerArgs.resolve_once``) that reads the
model's config and the platform, so most of its rules run only in the full check. The
parallel-layout rules below restate the ones its parallel hook asserts (tp_size is the
world of one replica; attention DP and MoE DP split it).
"""
from __future__ import annotations

from inproc.engines import flags
from inproc.engines.base import CheckSkipped
from inproc.errors import UsageError



def parallel_layout(sa) -> tuple[int, str]:
    """GPUs SGLang occupies on one node: TP × PP per replica, × DP replicas, over nnodes."""
    parts = [("TP", sa.tp_size), ("PP", sa.pp_size), ("DP", sa.dp_size)]
    n = 1
    for _, size in parts:
        n *= size
    nnodes = getattr(sa, "nnodes", 1) or 1
    text = " × ".join(f"{k} {v}" for k, v in parts if v != 1 or k == "TP")
    if nnodes > 1:
        n //= nnodes
        text += f" over {nnodes} nodes"
    return n, text


def argument_checks(sa, explicit: set[str]) -> str:
    """Rules SGLang applies to the parallel sizes and memory fraction alone; returns what was judged."""
    tp = sa.tp_size
    attn_dp = getattr(sa, "attn_dp_size", 1) or 1
    moe_dp = getattr(sa, "moe_dp_size", 1) or 1
    ep = getattr(sa, "ep_size", 1) or 1
    if tp % attn_dp:
        raise UsageError(f"SGLang needs tp-size divisible by attn-dp-size; got tp-size {tp}, attn-dp-size {attn_dp}.")
    if tp % moe_dp:
        raise UsageError(f"SGLang needs tp-size divisible by moe-dp-size; got tp-size {tp}, moe-dp-size {moe_dp}.")
    if ep * moe_dp > tp:
        raise UsageError(f"SGLang needs ep-size × moe-dp-size ≤ tp-size; got {ep} × {moe_dp} > {tp}.")
    frac = sa.mem_fraction_static
    if frac is not None and not 0 < frac <= 1:
        raise UsageError(f"Bad mem-fraction-static {frac!r}: SGLang takes a fraction of GPU memory in (0, 1].")
    return "parallel layout (tp/attn-dp/moe-dp/ep), mem-fraction-static"


def engine_config_check(sa, gpus: int) -> str:
    """``ServerArgs.resolve_once()`` when this machine is the kind the profile targets, else :class:`CheckSkipped`."""
    count = _gpu_count()
    if gpus > count:
        raise CheckSkipped(f"needs {gpus} GPUs; here {count}. Run `inproc profile check` on the target machine")
    if gpus == 0 and count:
        raise CheckSkipped("a CPU profile on a GPU machine")
    try:
        sa.resolve_once()
    except ImportError as e:
        raise CheckSkipped(f"SGLang's environment is incomplete here ({e})") from None
    except OSError as e:
        raise CheckSkipped(f"the model's config could not be read ({flags.error_text(e)[:160]})") from None
    except (ValueError, TypeError, AssertionError, NotImplementedError, RuntimeError) as e:
        raise UsageError(f"SGLang's resolve_once rejects the profile's settings: {flags.error_text(e)}") from None
    return "ServerArgs resolved"


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
