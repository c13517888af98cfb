"""SGLang adapter: the scheduler built in this process and stepped one iteration at a time.

Rank 0's ``Scheduler`` lives in the calling thread (see ``launch.py``); its request
socket and output senders are replaced by an in-process inbox and sink (``io.py``).
:meth:`SglangEngine.step` runs the body of SGLang's ``event_loop_normal`` once: receive
(and broadcast to TP peers), form the next batch, run it, process its result. The model
forward therefore runs in the caller's thread, and a breakpoint in SGLang code stops
the tool.

Queue lengths are read right after the batch is formed. SGLang keeps running requests
in ``running_batch`` and runs a new prefill batch beside it (not merged until the next
iteration), so ``num_running`` counts the union of the two: every admitted request that
holds KV cache, which is what ``max_running_requests`` limits. ``num_scheduled_tokens``
is the extend tokens of a prefill batch, or one per request for a plain decode batch.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Sequence

from inproc.engines.base import EngineBuildError, files_under
from inproc.engines.pieces import require
from inproc.engines.sglang.info import read_info
from inproc.engines.sglang.anatomy import forward_cost
from inproc.engines.sglang.io import Inbox, OutputSink, RidMap, make_generate_req
from inproc.engines.sglang.loop import EventLoop
from inproc.types import EngineCounters, LaunchSpec, RequestDelta, RequestSpec, StepResult

# Steps reset_prefix_cache may take: SGLang flushes only when fully idle, which takes
# one step to drop the last batch, plus one forward per request still being aborted.
FLUSH_MAX_STEPS = 16


# What the adapter calls on SGLang's scheduler (loop.py, io.py wiring, info.py): a version
# without one fails at build with its name, not inside a step.
NEEDED_SCHEDULER_INTERNALS = (
    "ingest_requests", "get_next_batch_to_run", "run_batch", "process_batch_result", "on_idle", "running_batch",
    "waiting_queue", "last_batch", "request_receiver", "ipc_channels.send_to_tokenizer",
    "ipc_channels.send_to_detokenizer", "metrics_reporter.start_scheduler_time_accounting", "tp_worker.model_runner",
    "token_to_kv_pool_allocator", "enable_overlap", "pool_stats_observer.get_pool_stats",
)
OVERLAP_INTERNALS = ("is_disable_overlap_for_batch", "_apply_war_barrier", "launch_batch_sample_if_needed",
                     "enable_unified_memory", "is_generation")


def _war_barrier_enabled() -> bool:
    """Whether SGLang's loop fences result processing behind the forward (as run_event_loop decides)."""
    from sglang.srt.environ import envs
    from sglang.srt.utils import is_cuda

    return bool(is_cuda() or envs.SGLANG_ENABLE_WAR_BARRIER.get())


class SglangEngine:
    """An in-process SGLang scheduler behind the :class:`~inproc.engines.base.Engine` interface."""

    def __init__(self, launched, server_args, spec: LaunchSpec) -> None:
        from inproc.engines.sglang import ADAPTER

        for internal in NEEDED_SCHEDULER_INTERNALS + (OVERLAP_INTERNALS if launched.scheduler.enable_overlap else ()):
            require(ADAPTER, internal, on=launched.scheduler)
        self._launched = launched
        self._sched = launched.scheduler
        self._inbox = Inbox()
        self._sink = OutputSink()
        self._rids = RidMap()
        self._live: set[str] = set()  # SGLang rids submitted and not yet finished or aborted
        self._aborting: set[str] = set()  # aborted by the driver, not yet dropped by SGLang
        self._spec = [0, 0, 0]  # drafts, draft tokens, accepted draft tokens (cumulative)
        self._num_preempted = 0
        self._dropped_tokens = 0  # emitted for requests the driver had aborted
        # SGLang's own completion_tokens for each finished request, by driver id: the
        # figure the tokens streamed through step() must add up to.
        self.output_lengths: dict[str, int | None] = {}
        self._wire()
        # The anatomy's per-batch accounting is inproc's own here (SGLang turns nothing on for it).
        cost = forward_cost(self._sched, server_args.cuda_graph_backend_decode) if spec.anatomy else None
        self._loop = EventLoop(self._sched, cost, overlap=bool(self._sched.enable_overlap))
        self.info = read_info(self._sched, server_args, spec.model, self._loop.name)

    # -- wiring -------------------------------------------------------------
    def _wire(self) -> None:
        s = self._sched
        s.request_receiver = dataclasses.replace(s.request_receiver, recv_from_tokenizer=self._inbox, recv_from_rpc=Inbox())
        for sender in (s.ipc_channels.send_to_tokenizer, s.ipc_channels.send_to_detokenizer):
            sender.send_output = self._sink.send_output
        # What run_event_loop sets up before dispatching to a loop.
        if s.device == "cpu":
            s.schedule_stream.synchronize = lambda: None
        elif s.enable_overlap and hasattr(s.schedule_stream, "cuda_stream") \
                and s.schedule_stream.cuda_stream == s.forward_stream.cuda_stream:
            from sglang.srt.managers.utils import allocate_distinct_stream

            s.schedule_stream = allocate_distinct_stream(s.device_module, (s.forward_stream,))
        s._war_barrier_enabled = _war_barrier_enabled()
        s.metrics_reporter.start_scheduler_time_accounting()
        if not s.spec_algorithm.is_none():
            self._count_spec(s.metrics_reporter)

    def _count_spec(self, reporter) -> None:
        """SGLang's spec counters reset every log interval; keep our own lifetime sums."""
        from sglang.srt.runtime_context import get_spec

        spec = get_spec()
        per_round = (spec.speculative_num_draft_tokens - 1) if spec.speculative_num_draft_tokens else (spec.speculative_num_steps or 0)
        update, totals = reporter.update_spec_metrics, self._spec

        def update_and_count(bs, num_correct_drafts, num_accept_tokens, *args, **kwargs):
            totals[0] += int(bs)
            totals[1] += int(bs) * int(per_round)
            totals[2] += int(num_correct_drafts)  # accepted drafts, without the bonus token
            return update(bs, num_correct_drafts, num_accept_tokens, *args, **kwargs)

        reporter.update_spec_metrics = update_and_count

    # -- Engine interface -----------------------------------------------------
    def add_request(self, spec: RequestSpec) -> None:
        from sglang.srt.managers.io_struct import sock_send

        rid = self._rids.add(spec.request_id)
        sock_send(self._inbox, make_generate_req(spec, rid, self.info.vocab_size))
        self._live.add(rid)

    def step(self) -> StepResult:
        from sglang.srt.utils import DynamicGradMode

        s = self._sched
        with DynamicGradMode(), s.device_module.StreamContext(s.schedule_stream):
            try:
                it = self._loop.iterate()
            finally:
                # The watchdog counts a set marker as a forward in flight; between steps
                # there is none, however long the driver waits.
                s.cur_batch_for_debug = None
        self._num_preempted += it.queues["num_preempted"]
        t_convert = time.perf_counter()
        deltas = self._deltas()
        # The sink converted SGLang's outputs inside process_batch_result: the adapter's time, not SGLang's.
        # (An abort or control reply sent while ingesting is sink time outside it: hence the floor.)
        sink_s, self._sink.convert_s = self._sink.convert_s, 0.0
        convert_s = time.perf_counter() - t_convert + sink_s
        return StepResult(deltas=deltas, **it.queues, batch=it.shape, returned_lag=it.returned_lag,
                          forward=it.forward, schedule_s=it.schedule_s, update_s=max(it.update_s - sink_s, 0.0),
                          probe_s=it.probe_s, convert_s=convert_s)

    def _deltas(self) -> tuple[RequestDelta, ...]:
        deltas = []
        for rid, p in self._sink.drain().items():
            if rid not in self._live:
                # An aborted running request rides one more forward; its token reaches no one.
                self._dropped_tokens += len(p.new_token_ids)
                if p.finished:  # SGLang has dropped an aborted request
                    self._aborting.discard(rid)
                    self._rids.forget(rid)
                continue  # the driver aborted it and asked to hear no more of it
            request_id = self._rids.to_driver[rid]
            if p.finished:
                self._live.discard(rid)
                self._rids.forget(rid)
                self.output_lengths[request_id] = p.sglang_output_len
            deltas.append(RequestDelta(request_id, tuple(p.new_token_ids), p.finished, p.finish_reason, p.num_cached_tokens))
        return tuple(deltas)

    def abort(self, request_ids: Sequence[str]) -> None:
        from sglang.srt.managers.io_struct import AbortReq, sock_send

        for request_id in request_ids:
            rid = self._rids.to_sglang.get(request_id)
            if rid is not None and rid in self._live:
                # Goes through the next step's receive-and-broadcast, so every TP rank drops it.
                sock_send(self._inbox, AbortReq(rid=rid))
                self._live.discard(rid)
                self._aborting.add(rid)

    def has_unfinished(self) -> bool:
        # Aborted requests count until SGLang reports them gone (at the next step).
        return bool(self._live or self._aborting)

    def set_anatomy(self, on: bool) -> bool:
        return False  # the anatomy is inproc's estimate, fixed at build (anatomy.py): nothing per step to switch

    def reset_prefix_cache(self) -> bool:
        from sglang.srt.managers.io_struct import FlushCacheReqInput, FlushCacheReqOutput, sock_send

        if self._live:
            return False
        # A timeout makes SGLang defer the flush until it is fully idle (the last batch
        # dropped), instead of refusing it on the first step that is not.
        sock_send(self._inbox, FlushCacheReqInput(timeout_s=60.0))
        for _ in range(FLUSH_MAX_STEPS):
            self.step()
            replies = [r for r in self._sink.control if isinstance(r, FlushCacheReqOutput)]
            if replies:
                self._sink.control = [r for r in self._sink.control if not isinstance(r, FlushCacheReqOutput)]
                return bool(replies[-1].success)
        return False

    def counters(self) -> EngineCounters:
        sink = self._sink
        spec = self._spec if self.info.settings.speculative_method else (None, None, None)
        return EngineCounters(sink.generation_tokens, sink.prefix_queries, sink.prefix_hits, self._num_preempted,
                              self._dropped_tokens, *spec)

    def start_profile(self, kind: str, directory: str, with_stack: bool, name: str) -> None:
        """SGLang's own profiler (its ProfileReq, broadcast to every TP rank), started now."""
        from sglang.srt.managers.io_struct import ProfileReq, ProfileReqType

        from inproc.engines.cuda import why_unavailable

        activities = ["CPU"] + ([] if why_unavailable() else ["GPU"]) if kind == "torch" else ["CUDA_PROFILER"]
        self._profile_dir, self._profile_before = directory, files_under(directory)
        self._control(ProfileReq(req_type=ProfileReqType.START_PROFILE, output_dir=directory, activities=activities,
                                 with_stack=with_stack, record_shapes=False, profile_id=name))

    def stop_profile(self) -> tuple[str, ...]:
        from sglang.srt.managers.io_struct import ProfileReq, ProfileReqType

        self._control(ProfileReq(req_type=ProfileReqType.STOP_PROFILE))
        return tuple(sorted(files_under(self._profile_dir) - self._profile_before))

    def kernel_profiler(self, trace_dir: str, name: str):
        """torch's profiler in this process, which runs rank 0's scheduler and forward (other TP ranks: unseen)."""
        from inproc.engines.torchprof import KernelProfiler

        return KernelProfiler("cuda" if str(self._sched.device).startswith("cuda") else "cpu", trace_dir, name)

    def _control(self, request) -> None:
        """A control request, taken in at once (between steps), as the scheduler's loop takes it in."""
        from sglang.srt.managers.io_struct import sock_send

        sock_send(self._inbox, request)
        self._sched.ingest_requests()
        self._sink.control.clear()  # its reply: nobody waits for it

    def shutdown(self) -> None:
        from inproc.engines.sglang.launch import release
        from sglang.srt.managers.io_struct import ShutdownReq, sock_send

        launched, self._launched = self._launched, None
        if launched is None:
            return
        if launched.tp_size > 1 and launched.scheduler is not None:
            # Every other rank, on this node or another, leaves its loop on the broadcast ShutdownReq,
            # as under sglang serve (other nodes' launchers then return: inproc worker exits).
            sock_send(self._inbox, ShutdownReq())
            launched.scheduler.ingest_requests()
        self._sched = None
        release(launched)


def build_sglang_engine(spec: LaunchSpec) -> SglangEngine:
    """Build SGLang's scheduler in this process from the profile's ``sglang serve`` arguments."""
    from inproc.engines.sglang.launch import adapter_server_args, launch

    if os.path.isabs(spec.model) and not os.path.exists(spec.model):
        raise EngineBuildError(f"No model at {spec.model!r}: the profile's model path does not exist.")
    server_args = adapter_server_args(spec.model, dict(spec.engine_args))
    try:
        launched = launch(server_args)
    except EngineBuildError:
        raise
    except (ValueError, RuntimeError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise EngineBuildError(f"SGLang could not build the engine: {first}") from e
    try:
        return SglangEngine(launched, server_args, spec)
    except BaseException:
        from inproc.engines.sglang.launch import release

        release(launched)
        raise
