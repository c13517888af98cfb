"""vLLM adapter: ``LLMEngine`` built in this process and stepped one iteration at a time.

With ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` the EngineCore lives in the calling process
(``InprocClient``), so ``LLMEngine.step()`` runs schedule + forward + output processing
right here and a breakpoint in vLLM code stops the tool. For TP > 1 the executor spawns
worker processes, but scheduling and this adapter stay in-process.

What each step formed and returned is read by :class:`~inproc.engines.vllm.probe.SchedulerProbe`,
which wraps this engine's scheduler. Under async scheduling (vLLM's default on GPUs)
a step returns the outputs of the batch the previous step formed; the probe says so
(``returned_lag``), and the driver files the batch's forward under the step that formed it.
"""
from __future__ import annotations

import logging
import os
import time
import warnings
from typing import Sequence

from inproc.engines.base import EngineBuildError, files_under
from inproc.engines.pieces import require
from inproc.engines.flags import one_line
from inproc.engines.vllm.accounting import ANATOMY, HEADLINE, AccountingSwitch, drop_unread_stats
from inproc.engines.vllm.graphs import CaptureMemory, capture_memory
from inproc.engines.vllm.info import read_info
from inproc.engines.vllm.probe import SchedulerProbe
from inproc.drafts import SpecStep
from inproc.types import EngineCounters, LaunchSpec, RequestDelta, RequestSpec, StepResult

NO_DRAFTS = SpecStep()  # a speculating engine's step whose batch verified no draft (vLLM reports no stats then)


# What the adapter reads on vLLM's scheduler (probe.py, info.py): a version without one
# fails at build with its name, not inside a step.
NEEDED_SCHEDULER_INTERNALS = ("schedule", "update_from_output", "running", "waiting", "requests",
                              "kv_cache_config", "kv_cache_manager.block_pool")


class VllmEngine:
    """An in-process vLLM ``LLMEngine`` behind the :class:`~inproc.engines.base.Engine` interface."""

    def __init__(self, llm_engine, model: str, graphs: CaptureMemory | None = None, anatomy: bool = True) -> None:
        from inproc.engines.vllm import ADAPTER

        def need(obj, path: str):
            return require(ADAPTER, path, on=obj)

        self._engine = llm_engine
        self._core = need(llm_engine, "engine_core.engine_core")  # EngineCore, in this process
        self._scheduler = need(self._core, "scheduler")
        for internal in NEEDED_SCHEDULER_INTERNALS:
            need(self._scheduler, internal)
        self._probe = SchedulerProbe(self._scheduler, shapes=anatomy)
        self.info = read_info(llm_engine, self._scheduler, model, graphs or CaptureMemory())
        self._speculative = bool(self.info.settings.speculative_method)
        k = self.info.settings.num_speculative_tokens or 0
        self._no_drafts = SpecStep(0, 0, 0, (0,) * k, (0,) * k)  # per position too: none drafted, none accepted
        # Built with the anatomy's accounting: it runs only in the anatomy's own pass (set_anatomy).
        self._accounting = AccountingSwitch(self) if anatomy else None
        if self._accounting is not None:
            self._accounting.set(HEADLINE)

    # -- Engine interface --------------------------------------------------
    def add_request(self, spec: RequestSpec) -> None:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        params = SamplingParams(
            max_tokens=spec.max_tokens,
            temperature=spec.temperature,
            seed=spec.seed,
            ignore_eos=spec.ignore_eos,
            detokenize=False,
            output_kind=RequestOutputKind.DELTA,
        )
        self._engine.add_request(spec.request_id, {"prompt_token_ids": list(spec.prompt_token_ids)}, params)

    def step(self) -> StepResult:
        probe = self._probe
        probe.begin()
        outputs = self._engine.step()
        t_convert = time.perf_counter()
        deltas = []
        for out in outputs:
            comp = out.outputs[0] if out.outputs else None
            deltas.append(
                RequestDelta(
                    request_id=out.request_id,
                    new_token_ids=tuple(comp.token_ids) if comp is not None else (),
                    finished=bool(out.finished),
                    finish_reason=comp.finish_reason if comp is not None else None,
                    num_cached_tokens=out.num_cached_tokens,
                )
            )
        convert_s = time.perf_counter() - t_convert
        return StepResult(
            deltas=tuple(deltas),
            num_running=probe.num_running,
            num_waiting=probe.num_waiting,
            num_scheduled_tokens=probe.num_scheduled_tokens,
            num_preempted=probe.num_preempted,
            batch=probe.batch,
            returned_lag=probe.returned_lag,
            forward=probe.forward,
            schedule_s=probe.schedule_s,
            update_s=probe.update_s,
            probe_s=probe.probe_s,
            convert_s=convert_s,
            kv_used_blocks=probe.kv_used_blocks,
            spec=self._spec_step(probe),
        )

    def _spec_step(self, probe: SchedulerProbe) -> SpecStep | None:
        """The drafts of the returned batch; none counted while speculating with stats on: none were verified."""
        if probe.spec is not None or not self._speculative or not self._scheduler.log_stats:
            return probe.spec
        return self._no_drafts if probe.per_position else NO_DRAFTS

    def abort(self, request_ids: Sequence[str]) -> None:
        if request_ids:
            self._engine.abort_request(list(request_ids))

    def has_unfinished(self) -> bool:
        # Under async scheduling a batch may still be in flight (its outputs not yet returned).
        return bool(self._engine.has_unfinished_requests() or self._core.batch_queue)

    def set_anatomy(self, on: bool) -> bool:
        """The anatomy's own accounting (``PerfStats``, batch shapes) on or off; False when built without it."""
        if self._accounting is None:
            return False
        self._accounting.set(ANATOMY if on else HEADLINE)
        return True

    def reset_prefix_cache(self) -> bool:
        return bool(self._engine.reset_prefix_cache())

    def counters(self) -> EngineCounters:
        c = self._probe.counters
        if not self._scheduler.log_stats:
            # The rest come from vLLM's SchedulerStats, made only with stat logging on.
            return EngineCounters(c.generation_tokens)
        if not self._speculative:
            return EngineCounters(c.generation_tokens, c.prefix_queries, c.prefix_hits)
        return EngineCounters(c.generation_tokens, c.prefix_queries, c.prefix_hits, spec_drafts=c.spec_drafts,
                              spec_draft_tokens=c.spec_draft_tokens, spec_accepted_tokens=c.spec_accepted_tokens)

    def start_profile(self, kind: str, directory: str, with_stack: bool, name: str) -> None:
        # The kind, directory and stack setting were given at build (ADAPTER.profiler_args).
        self._profile_dir = directory
        self._profile_before = files_under(directory)
        self._engine.start_profile(name)

    def stop_profile(self) -> tuple[str, ...]:
        self._engine.stop_profile()
        return tuple(sorted(files_under(self._profile_dir) - self._profile_before))

    def kernel_profiler(self, trace_dir: str, name: str):
        """torch's profiler in this process: the model runs here only with vLLM's one-process executor."""
        from inproc.engines.base import KernelsUnavailable
        from inproc.engines.torchprof import KernelProfiler

        executor = type(getattr(self._core, "model_executor", None)).__name__
        if executor != "UniProcExecutor":
            raise KernelsUnavailable(f"the kernel pass profiles inproc's own process, and vLLM's {executor} runs the "
                                     "model in worker processes (tensor-parallel-size > 1, or several nodes)")
        import torch

        return KernelProfiler("cuda" if torch.cuda.is_available() else "cpu", trace_dir, name)

    def shutdown(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.engine_core.shutdown()


def build_vllm_engine(launch: LaunchSpec) -> VllmEngine:
    """Build ``LLMEngine`` in this process from the profile's ``vllm serve`` arguments."""
    # EngineCore must run in this process: that is the point of the tool.
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    from inproc.engines.vllm import ADAPTER

    ADAPTER.quiet()  # before vllm is imported (the registry does it too; a direct caller may not)
    # torch deprecation notices raised while vLLM's kernel dispatcher scans modules at build.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm\.triton_utils\.dispatcher")
    from inproc.engines.vllm.args import parse_profile
    from inproc.engines.vllm.nodes import check_head

    engine_args = parse_profile(launch.model, dict(launch.engine_args))
    check_head(engine_args)
    if launch.anatomy:  # --anatomy off: the three stay as the profile's arguments (vLLM's defaults) set them
        engine_args.disable_log_stats = False  # per-step scheduler stats feed the probe (the front end's: dropped)
        engine_args.cudagraph_metrics = True  # each batch's CUDAGraphStat (mode, padding)
        engine_args.enable_mfu_metrics = True  # each batch's PerfStats (FLOPs, bytes per GPU)
    from vllm.v1.engine.llm_engine import LLMEngine

    try:
        with capture_memory() as graphs:
            llm_engine = LLMEngine.from_engine_args(engine_args)
    except (ValueError, RuntimeError, OSError) as e:
        # One line, pydantic's field errors included (a Ray profile on a CPU gets vLLM's refusal here).
        raise EngineBuildError(f"vLLM could not build the engine: {one_line(str(e)) or type(e).__name__}") from e
    drop_unread_stats(llm_engine)  # the front end's loggers and request stats: inproc reads only the scheduler's
    # A step that raises makes EngineCore dump its config and batch to stderr at ERROR; inproc reports the
    # engine's message itself (one line, or the cell's Error entry), so the dump would only bury it.
    logging.getLogger("vllm.logging_utils.dump_input").setLevel(logging.CRITICAL)
    return VllmEngine(llm_engine, launch.model, graphs, anatomy=launch.anatomy)
