"""vLLM adapter: ``LLMEngine`` built in this process and stepped one iteration at a time.

With ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` the EngineCore lives in the calling process
(``InprocClient``), so ``LLMEngine.step()`` runs schedule + forward + output processing
right here and a breakpoint in vLLM code stops the tool. For TP > 1 the executor spawns
worker processes, but scheduling and this adapter stay in-process.

Queue lengths are read inside the step: the scheduler's ``schedule`` is wrapped on this
instance so that ``len(running)`` / ``len(waiting)`` are sampled right after the batch is
formed, which is the batch the step runs. Per-step engine statistics (prefix-cache
queries/hits, speculative-decoding counts, preemptions) are read from the scheduler
stats that ``update_from_output`` attaches to its outputs.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Sequence

from inproc.engines.base import EngineBuildError
from inproc.types import (
    Capacity,
    EngineInfo,
    KVCacheGroup,
    LaunchSpec,
    RequestDelta,
    RequestSpec,
    StepResult,
    special_token_ids,
)


@dataclass
class _StepProbe:
    """What the wrapped scheduler saw during the current step."""

    num_running: int = 0
    num_waiting: int = 0
    num_scheduled_tokens: int = 0
    num_preempted: int = 0


@dataclass
class EngineCounters:
    """Cumulative engine-side statistics since the engine was built."""

    prefix_queries: int = 0
    prefix_hits: int = 0
    spec_drafts: int = 0
    spec_draft_tokens: int = 0
    spec_accepted_tokens: int = 0
    preemptions: int = 0
    generation_tokens: int = 0


def _group_kind(spec) -> tuple[str, int | None]:
    name = type(spec).__name__
    window = getattr(spec, "sliding_window", None)
    if "MLA" in name:
        return "mla", None
    if window:
        return "sliding_window", int(window)
    if "Chunked" in name:
        return "chunked_local_attention", getattr(spec, "attention_chunk_size", None)
    if "Mamba" in name:
        return "mamba", None
    return "full_attention", None


class VllmEngine:
    """An in-process vLLM ``LLMEngine`` behind the :class:`~inproc.engines.base.Engine` interface."""

    def __init__(self, llm_engine, model: str) -> None:
        self._engine = llm_engine
        self._core = llm_engine.engine_core.engine_core  # EngineCore, in this process
        self._scheduler = self._core.scheduler
        self._probe = _StepProbe()
        self._counters = EngineCounters()
        self._wrap_scheduler()
        self.info = self._read_info(model)

    # -- instrumentation -------------------------------------------------
    def _wrap_scheduler(self) -> None:
        sched = self._scheduler
        schedule, update = sched.schedule, sched.update_from_output
        probe, counters = self._probe, self._counters

        def schedule_and_sample(*args, **kwargs):
            out = schedule(*args, **kwargs)
            probe.num_running = len(sched.running)
            probe.num_waiting = len(sched.waiting)
            probe.num_scheduled_tokens = int(out.total_num_scheduled_tokens)
            probe.num_preempted = len(out.preempted_req_ids or ())
            return out

        def update_and_count(*args, **kwargs):
            outputs = update(*args, **kwargs)
            for eco in outputs.values():
                counters.generation_tokens += sum(len(o.new_token_ids) for o in eco.outputs)
                stats = eco.scheduler_stats
                if stats is None:
                    continue
                pcs = stats.prefix_cache_stats
                counters.prefix_queries += int(pcs.queries)
                counters.prefix_hits += int(pcs.hits)
                counters.preemptions += int(getattr(stats, "num_preemptions", 0) or 0)
                sds = stats.spec_decoding_stats
                if sds is not None:
                    counters.spec_drafts += int(sds.num_drafts)
                    counters.spec_draft_tokens += int(sds.num_draft_tokens)
                    counters.spec_accepted_tokens += int(sds.num_accepted_tokens)
            return outputs

        sched.schedule = schedule_and_sample
        sched.update_from_output = update_and_count

    def _read_info(self, model: str) -> EngineInfo:
        import vllm
        from vllm.v1.core.kv_cache_utils import get_max_concurrency_for_kv_cache_config

        cfg = self._engine.vllm_config
        kv = self._scheduler.kv_cache_config
        groups = []
        for g in kv.kv_cache_groups:
            kind, window = _group_kind(g.kv_cache_spec)
            groups.append(KVCacheGroup(kind, int(g.kv_cache_spec.block_size), len(g.layer_names), window))
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
        spec = cfg.speculative_config
        return EngineInfo(
            name="vllm",
            version=str(vllm.__version__),
            model=model,
            dummy_weights=str(cfg.load_config.load_format) == "dummy",
            capacity=capacity,
            vocab_size=int(cfg.model_config.get_vocab_size()),
            special_token_ids=special_token_ids(cfg.model_config.hf_config),
            settings={
                "tensor_parallel_size": cfg.parallel_config.tensor_parallel_size,
                "enable_expert_parallel": bool(cfg.parallel_config.enable_expert_parallel),
                "dtype": str(cfg.model_config.dtype).removeprefix("torch."),
                "quantization": cfg.model_config.quantization,
                "kv_cache_dtype": cfg.cache_config.cache_dtype,
                "enforce_eager": bool(cfg.model_config.enforce_eager),
                "cudagraph_capture_sizes": list(cfg.compilation_config.cudagraph_capture_sizes or []),
                "speculative_method": getattr(spec, "method", None) if spec else None,
                "num_speculative_tokens": getattr(spec, "num_speculative_tokens", None) if spec else None,
                "enable_chunked_prefill": bool(cfg.scheduler_config.enable_chunked_prefill),
            },
        )

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
        probe.num_running = probe.num_waiting = probe.num_scheduled_tokens = probe.num_preempted = 0
        outputs = self._engine.step()
        deltas = []
        for out in outputs:
            comp = out.outputs[0] if out.outputs else None
            new = tuple(comp.token_ids) if comp is not None else ()
            deltas.append(
                RequestDelta(
                    request_id=out.request_id,
                    new_token_ids=new,
                    finished=bool(out.finished),
                    finish_reason=comp.finish_reason if comp is not None else None,
                    num_cached_tokens=out.num_cached_tokens,
                )
            )
        return StepResult(
            deltas=tuple(deltas),
            num_running=probe.num_running,
            num_waiting=probe.num_waiting,
            num_scheduled_tokens=probe.num_scheduled_tokens,
            num_preempted=probe.num_preempted,
        )

    def abort(self, request_ids: Sequence[str]) -> None:
        if request_ids:
            self._engine.abort_request(list(request_ids))

    def has_unfinished(self) -> bool:
        return bool(self._engine.has_unfinished_requests())

    def reset_prefix_cache(self) -> bool:
        return bool(self._engine.reset_prefix_cache())

    def counters(self) -> dict[str, int]:
        c = self._counters
        out = {"prefix_queries": c.prefix_queries, "prefix_hits": c.prefix_hits, "preemptions": c.preemptions,
               "generation_tokens": c.generation_tokens}
        if self.info.settings.get("speculative_method"):
            out.update(spec_drafts=c.spec_drafts, spec_draft_tokens=c.spec_draft_tokens, spec_accepted_tokens=c.spec_accepted_tokens)
        return out

    def shutdown(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.engine_core.shutdown()


def build_vllm_engine(launch: LaunchSpec) -> VllmEngine:
    """Build ``LLMEngine`` in this process from the profile's ``vllm serve`` arguments."""
    # EngineCore must run in this process: that is the point of the tool.
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    # Engine INFO and WARNING lines drown the tool's progress; set VLLM_LOGGING_LEVEL to see them.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    # torch deprecation notices raised while vLLM's kernel dispatcher scans modules at build.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm\.triton_utils\.dispatcher")
    from inproc.engines.vllm.args import parse_profile

    engine_args = parse_profile(launch.model, dict(launch.engine_args))
    engine_args.disable_log_stats = False  # per-step scheduler stats feed EngineCounters
    from vllm.v1.engine.llm_engine import LLMEngine

    try:
        llm_engine = LLMEngine.from_engine_args(engine_args)
    except (ValueError, RuntimeError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise EngineBuildError(f"vLLM could not build the engine: {first}") from e
    return VllmEngine(llm_engine, launch.model)
