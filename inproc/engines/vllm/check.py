"""``inproc profile check`` for vLLM: what can be judged from the arguments alone, and the full config.

Argument level (any machine): vLLM's own config classes (``CacheConfig``, ``ParallelConfig``,
``SchedulerConfig``) are built from the fields the profile sets, so their validators judge
them; values vLLM derives from the model or platform are not judged here. The full check
is ``EngineArgs.create_engine_config()``, which needs the model's config and the platform
the profile targets.
"""
from __future__ import annotations

import dataclasses
import typing

from inproc.engines import flags
from inproc.engines.base import CheckSkipped
from inproc.engines.vllm.nodes import world_size
from inproc.errors import UsageError


def parallel_layout(ea) -> tuple[int, str]:
    """GPUs vLLM's parallel sizes occupy on one node: TP × PP × PCP per replica, × the node's DP replicas
    (EP reuses TP×DP GPUs); a replica spread over several nodes (``nnodes``) splits its ranks evenly."""
    dp = ea.data_parallel_size
    dp_local = ea.data_parallel_size_local or dp
    parts = [("TP", ea.tensor_parallel_size), ("PP", ea.pipeline_parallel_size),
             ("PCP", getattr(ea, "prefill_context_parallel_size", 1) or 1), ("DP", dp)]
    nnodes = int(getattr(ea, "nnodes", 1) or 1)
    # vLLM's ParallelConfig.nnodes_within_dp: the nodes one replica spans.
    within = max(nnodes // max(dp // dp_local, 1), 1)
    text = " × ".join(f"{k} {v}" for k, v in parts if v != 1 or k == "TP")
    if nnodes > 1:
        text += f" over {nnodes} nodes"
    return world_size(ea) // within * dp_local, text


def _reject(where: str, e: Exception) -> UsageError:
    return UsageError(f"vLLM's {where} rejects the profile's settings: {flags.one_line(str(e))}")


def argument_checks(ea, explicit: set[str]) -> str:
    """Judge the explicitly set fields with vLLM's config validators; returns what was judged."""
    from vllm.config import CacheConfig, ParallelConfig, SchedulerConfig

    judged = []
    for cls in (CacheConfig, ParallelConfig, SchedulerConfig):
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        kwargs = {n: getattr(ea, n) for n in sorted(explicit & names) if getattr(ea, n) is not None}
        if not kwargs:
            continue
        if cls is SchedulerConfig:
            # max_model_len comes from the model unless the profile sets it; without it, stand in a
            # length that never trips the length rules, which are then left to the full check.
            stand_in = max([kwargs.get("max_num_batched_tokens") or 0, kwargs.get("long_prefill_token_threshold") or 0, 1])
            kwargs = {**kwargs, "max_model_len": ea.max_model_len or stand_in, "is_encoder_decoder": False}
        try:
            cls(**kwargs)
        except (ValueError, TypeError) as e:
            raise _reject(cls.__name__, e) from None
        judged.append(cls.__name__)
    if ea.speculative_config:
        _check_speculative(ea.speculative_config)
        judged.append("speculative-config")
    return ", ".join(judged) or "nothing set that vLLM can judge without the model"


def _literal_values(tp) -> list[str]:
    out = []
    for arg in typing.get_args(tp):
        out += _literal_values(arg) if typing.get_args(arg) else [arg]
    return [a for a in out if isinstance(a, str)]


def _check_speculative(spec: dict) -> None:
    from vllm.config.speculative import SpeculativeConfig, SpeculativeMethod

    names = {f.name for f in dataclasses.fields(SpeculativeConfig) if f.init}
    for key in spec:
        if key.replace("-", "_") not in names:
            near = flags.closest(key, names)
            hint = f" Closest: {', '.join(near)}." if near else ""
            raise UsageError(f"Unknown speculative-config key {key!r}.{hint} vLLM's SpeculativeConfig has {len(names)} fields.")
    method = spec.get("method")
    methods = _literal_values(SpeculativeMethod)
    if method is not None and method not in methods:
        raise UsageError(f"Unknown speculative-config method {method!r}. vLLM {_version()} knows: {', '.join(sorted(methods))}.")


def _version() -> str:
    import vllm

    return vllm.__version__


def engine_config_check(ea, gpus: int) -> str:
    """``create_engine_config()`` when this machine is the kind the profile targets, else :class:`CheckSkipped`."""
    from vllm.platforms import current_platform

    device = current_platform.device_type
    if gpus == 0 and not current_platform.is_cpu():
        raise CheckSkipped(f"a CPU profile, and this vLLM targets {device}")
    if gpus > 0:
        count = _gpu_count() if not current_platform.is_cpu() else 0
        if count < gpus:
            raise CheckSkipped(f"needs {gpus} GPUs and a GPU build of vLLM; here vLLM targets {device} with {count} GPUs."
                          " Run `inproc profile check` on the target machine")
    try:
        config = ea.create_engine_config()
    except (ValueError, TypeError, NotImplementedError, AssertionError) as e:
        raise _reject("create_engine_config", e) from None
    except OSError as e:
        raise CheckSkipped(f"the model's config could not be read ({flags.error_text(e)[:160]})") from None
    return f"VllmConfig built for {device}: max_model_len {config.model_config.max_model_len}, block size {config.cache_config.block_size}"


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
