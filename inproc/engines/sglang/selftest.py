"""``inproc selftest`` for SGLang: the two event loops the adapter steps, the pieces it reaches for.

Modes: the normal loop (``disable-overlap-schedule``: a step returns the batch it formed; the
profiler, the forced preemption and the capacity checks ride on it) and the overlap loop (a
step returns the batch formed one step earlier). Speculative decoding is stepped where the
profile asks for it.
"""
from __future__ import annotations

import dataclasses

from inproc.engines.selftest_mode import SelftestMode
from inproc.types import LaunchSpec

#: The shipped profile whose tiny model and pool the selftest builds (launch_profiles/).
TINY_PROFILE = "cpu-sglang-tiny-llama.toml"
#: Taken from the tiny profile when a profile's own model is swapped for the tiny one.
TINY_ARGS = ("load-format", "context-length", "max-total-tokens")
#: A profile's arguments that describe its own model; dropped with it.
MODEL_ARGS = ("tokenizer-path", "tokenizer-mode", "revision", "json-model-override-args", "quantization",
              "chat-template", "tool-call-parser", "reasoning-parser", "served-model-name")

_SCHEDULER = "sglang.srt.managers.scheduler:Scheduler."
_IO = "sglang.srt.managers.io_struct:"
#: Engine code the adapter reaches for, each at the places SGLang has kept it.
PIECES = tuple((f"{_SCHEDULER}{name}",) for name in (
    "get_next_batch_to_run", "run_batch", "process_batch_result", "ingest_requests", "on_idle")) + tuple(
    (f"{_IO}{name}",) for name in ("sock_send", "AbortReq", "FlushCacheReqInput", "FlushCacheReqOutput", "ProfileReq",
                                   "ProfileReqType", "ShutdownReq")) + (
    ("sglang.srt.server_args:PortArgs.init_new",), ("sglang.srt.arg_groups.overrides:resolving_view",),
    ("sglang.srt.runtime_context:publish",), ("sglang.srt.runtime_context:spawn_world_rank",),
    ("sglang.srt.managers.scheduler:run_scheduler_process",),
    ("sglang.srt.distributed.parallel_state:cleanup_dist_env_and_memory",),
    ("sglang.srt.managers.load_snapshot:shm_path_for",), ("sglang.srt.utils:DynamicGradMode",),
)


#: Why the selftest does not force a preemption here (a "–" row, neither pass nor fail): SGLang's
#: admission reserves each new request's whole output (PrefillAdder.add_one_req), so requests that
#: fill the pool and outgrow it were never admitted together in the tries made (4 × 1,391 + 192
#: tokens in a 6,144-token pool, also with SGLANG_INIT_NEW_TOKEN_RATIO 0.05). Left open.
PREEMPTION_NOT_FORCED = ("not forced on SGLang: its admission reserves each new request's whole output, "
                         "so the requests that would outgrow the pool are not admitted together")


def commit() -> str:
    """SGLang's wheel records no commit."""
    return "not recorded in this build"


def returned_lag(info) -> int:
    """Steps from a batch to its outputs, as the built scheduler's event loop returns them."""
    return 1 if info.settings.event_loop == "overlap" else 0


def modes(launch: LaunchSpec) -> tuple[SelftestMode, ...]:
    """The normal loop (main) and the overlap loop, on ``launch``."""
    def with_args(**extra) -> LaunchSpec:
        return dataclasses.replace(launch, engine_args={**launch.engine_args, **extra})

    speculative = bool(launch.engine_args.get("speculative-algorithm"))
    return (
        SelftestMode("normal loop", with_args(**{"disable-overlap-schedule": True}), returned_lag,
                     speculative=speculative, main=True),
        SelftestMode("overlap loop", with_args(**{"disable-overlap-schedule": False}), returned_lag,
                     speculative=speculative),
    )
