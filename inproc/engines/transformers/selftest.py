"""``inproc selftest`` for transformers: the loop body the adapter steps and the pieces it reaches for.

One mode: synchronous batching (a step returns the tokens of the batch it formed); the profiler,
the forced preemption (the engine offloads a request back to its waiting queue when blocks run
short) and the capacity checks ride on it.
"""
from __future__ import annotations


from inproc.engines.selftest_mode import SelftestMode
from inproc.types import LaunchSpec

#: The shipped profile whose tiny model and pool the selftest builds (launch_profiles/).
TINY_PROFILE = "cpu-transformers-tiny-llama.toml"
#: Taken from the tiny profile when a profile's own model is swapped for the tiny one.
TINY_ARGS = ("load-format", "max-model-len", "num-blocks", "block-size", "max-batch-tokens", "device",
             "use-cuda-graph", "dtype")
MODEL_ARGS = ("attn-implementation",)
#: What a machine with CUDA keeps of the profile's own settings: its device and its graphs.
DEVICE_ARGS = ("device", "use-cuda-graph")


def tiny_args() -> tuple[str, ...]:
    """The tiny profile's settings a profile's selftest takes: all of :data:`TINY_ARGS` on a machine without CUDA
    (the tiny CPU variant), the pool and limits only where torch sees a CUDA device (the profile's device and
    graphs kept)."""
    import torch

    return TINY_ARGS if not torch.cuda.is_available() else tuple(a for a in TINY_ARGS if a not in DEVICE_ARGS)

_CB = "transformers.generation.continuous_batching"
#: Engine code the adapter reaches for.
PIECES = (
    ("transformers.generation.configuration_utils:ContinuousBatchingConfig",),
    (f"{_CB}.continuous_api:ContinuousBatchingManager._create_batch_processor",),
    (f"{_CB}.continuous_api:ContinuousBatchingManager._generation_step",),
    (f"{_CB}.continuous_api:ContinuousBatchingManager.add_request",),
    (f"{_CB}.continuous_api:ContinuousBatchingManager.cancel_request",),
    (f"{_CB}.continuous_api:ContinuousBatchProcessor.prepare_next_batch",),
    (f"{_CB}.continuous_api:ContinuousBatchProcessor.update_batch",),
    (f"{_CB}.scheduler:SCHEDULER_MAPPING",),
    (f"{_CB}.scheduler:FIFOScheduler.schedule_batch",),
    (f"{_CB}.model_runner:ModelRunner.maybe_pad_inputs",),
    (f"{_CB}.requests:FutureRequestState",),
    (f"{_CB}.cache:PagedAttentionCache",),
)


def commit() -> str:
    """The commit pip recorded for a transformers installed from git (direct_url.json's vcs_info), else unknown:
    a release wheel records none."""
    import importlib.metadata
    import json

    try:
        text = importlib.metadata.distribution("transformers").read_text("direct_url.json")
        found = json.loads(text).get("vcs_info", {}).get("commit_id") if text else None
    except (importlib.metadata.PackageNotFoundError, ValueError, AttributeError):
        found = None
    return str(found) if found else "unknown (a release wheel records no commit)"


def modes(launch: LaunchSpec) -> tuple[SelftestMode, ...]:
    return (SelftestMode("sync batching", launch, main=True),)
