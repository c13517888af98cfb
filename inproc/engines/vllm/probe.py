"""What vLLM's scheduler saw and did in each step, read by wrapping two of its methods.

``Scheduler.schedule`` is wrapped on the engine's own scheduler instance: right after it
forms a batch, the queues and the batch's shape are read, and the ``SchedulerOutput`` is
tagged with the step that formed it. ``Scheduler.update_from_output(scheduler_output,
model_runner_output)`` is the one place where a batch and what it produced meet: its
``SchedulerStats`` carry the batch's ``CUDAGraphStat`` (``--cudagraph-metrics``) and
``PerfStats`` (``--enable-mfu-metrics``, vLLM's own FLOP and byte accounting), and the
tag says how many steps ago the batch was formed (0 synchronous, 1 under async
scheduling, where ``LLMEngine.step()`` dispatches batch k and returns batch k-1).
Both wrappers time the wrapped call and, apart, their own bookkeeping.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from inproc.drafts import SpecStep
from inproc.types import BatchShape, ForwardStats

_TAG = "_inproc_step"  # attribute set on each SchedulerOutput: the adapter step that formed it


@dataclass
class CounterTotals:
    """Cumulative engine-side statistics since the engine was built (read as ``types.EngineCounters``)."""

    prefix_queries: int = 0
    prefix_hits: int = 0
    spec_drafts: int = 0
    spec_draft_tokens: int = 0
    spec_accepted_tokens: int = 0
    generation_tokens: int = 0


class SchedulerProbe:
    """Wraps one scheduler instance; :meth:`begin` before each step, then read the fields."""

    def __init__(self, scheduler, shapes: bool = True) -> None:
        self.sched = scheduler
        self.shapes = shapes  # read each batch's shape (per-request Python; off with --anatomy off)
        self.per_position = True  # read the drafts' per-position counts (off: scripts/bench.py spec's A/B)
        self.read_kv = True  # read the KV blocks held at each step (off only in scripts/bench.py fidelity's A/B)
        self.counters = CounterTotals()
        self.step = 0  # adapter steps begun so far
        self.begin()
        self._wrap()

    def begin(self) -> None:
        """A new step: forget what the last one saw."""
        self.step += 1
        self.num_running = self.num_waiting = self.num_scheduled_tokens = self.num_preempted = 0
        self.batch: BatchShape | None = None
        self.returned_lag = -1
        self.forward: ForwardStats | None = None
        self.schedule_s = self.update_s = self.probe_s = 0.0
        self.kv_used_blocks: int | None = None
        self.spec: SpecStep | None = None  # the drafts of the batch this step returned (None: no stats of any)

    def _wrap(self) -> None:
        sched, probe = self.sched, self
        schedule, update = sched.schedule, sched.update_from_output

        def schedule_and_sample(*args, **kwargs):
            t0 = time.perf_counter()
            out = schedule(*args, **kwargs)
            t1 = time.perf_counter()
            probe.schedule_s += t1 - t0
            probe._formed(out)
            probe.probe_s += time.perf_counter() - t1
            return out

        def update_and_count(scheduler_output, model_runner_output, *args, **kwargs):
            t0 = time.perf_counter()
            outputs = update(scheduler_output, model_runner_output, *args, **kwargs)
            t1 = time.perf_counter()
            probe.update_s += t1 - t0
            probe._returned(scheduler_output, outputs)
            probe.probe_s += time.perf_counter() - t1
            return outputs

        sched.schedule = schedule_and_sample
        sched.update_from_output = update_and_count

    def _formed(self, out) -> None:
        """The batch ``schedule`` just formed: queues, preemptions, shape, KV blocks held; tag it with this step."""
        sched = self.sched
        self.num_running = len(sched.running)
        self.num_waiting = len(sched.waiting)
        self.num_scheduled_tokens = int(out.total_num_scheduled_tokens)
        self.num_preempted = len(out.preempted_req_ids or ())
        self.batch = batch_shape(out, sched.requests) if self.shapes else None
        if self.read_kv:
            pool = sched.kv_cache_manager.block_pool
            # Free blocks include cached ones no request holds; the null block is never free.
            self.kv_used_blocks = int(pool.num_gpu_blocks) - 1 - int(pool.get_num_free_blocks())
        setattr(out, _TAG, self.step)

    def _returned(self, scheduler_output, outputs) -> None:
        """Outputs of a batch came back: which step formed it, and the engine's stats of it."""
        formed = getattr(scheduler_output, _TAG, None)
        self.returned_lag = self.step - formed if formed is not None else -1
        c = self.counters
        for eco in outputs.values():
            c.generation_tokens += sum(len(o.new_token_ids) for o in eco.outputs)
            stats = eco.scheduler_stats
            if stats is None:
                continue
            pcs = stats.prefix_cache_stats
            c.prefix_queries += int(pcs.queries)
            c.prefix_hits += int(pcs.hits)
            sds = stats.spec_decoding_stats
            if sds is not None:
                self._drafts(sds)
            self.forward = forward_stats(stats.cudagraph_stats, stats.perf_stats)


    def _drafts(self, sds) -> None:
        """One ``SpecDecodingStats``: into the lifetime counters and this step's own (several add up)."""
        step = SpecStep(int(sds.num_drafts), int(sds.num_draft_tokens), int(sds.num_accepted_tokens),
                        tuple(sds.num_accepted_tokens_per_pos) if self.per_position else (),
                        tuple(sds.num_draft_tokens_per_pos) if self.per_position else ())
        c = self.counters
        c.spec_drafts += step.num_drafts
        c.spec_draft_tokens += step.num_draft_tokens
        c.spec_accepted_tokens += step.num_accepted_tokens
        self.spec = step if self.spec is None else add_spec(self.spec, step)


def add_spec(a: SpecStep, b: SpecStep) -> SpecStep:
    """Two counts of drafts as one (per position: the longer list's positions, summed where both have them)."""
    def pos(x: tuple[int, ...], y: tuple[int, ...]) -> tuple[int, ...]:
        n = max(len(x), len(y))
        return tuple((x[i] if i < len(x) else 0) + (y[i] if i < len(y) else 0) for i in range(n))
    return SpecStep(a.num_drafts + b.num_drafts, a.num_draft_tokens + b.num_draft_tokens,
                    a.num_accepted_tokens + b.num_accepted_tokens, pos(a.accepted_per_pos, b.accepted_per_pos),
                    pos(a.drafted_per_pos, b.drafted_per_pos))


def batch_shape(out, requests) -> BatchShape:
    """Prefill and decode requests and tokens of a ``SchedulerOutput``.

    ``schedule()`` has already advanced each request's computed tokens, so the count before
    this step comes from the output itself. A request is in prefill while that count is
    short of ``max(prompt tokens, all tokens - 1)``: vLLM's own prefill boundary, which
    also covers a preempted request recomputing its output so far.
    """
    before = {nr.req_id: nr.num_computed_tokens for nr in out.scheduled_new_reqs}
    cached = out.scheduled_cached_reqs
    before.update(zip(cached.req_ids, cached.num_computed_tokens))
    p_reqs = p_tokens = d_reqs = d_tokens = 0
    for rid, n in out.num_scheduled_tokens.items():
        req = requests[rid]
        if before[rid] < max(req.num_prompt_tokens, req.num_tokens - 1):
            p_reqs, p_tokens = p_reqs + 1, p_tokens + n
        else:
            d_reqs, d_tokens = d_reqs + 1, d_tokens + n
    return BatchShape(p_reqs, p_tokens, d_reqs, d_tokens)


def forward_stats(graph, perf) -> ForwardStats | None:
    """vLLM's ``CUDAGraphStat`` and ``PerfStats`` of one batch (each None when not reported)."""
    if graph is None and perf is None:
        return None
    return ForwardStats(
        graph_mode=str(graph.runtime_mode) if graph is not None else None,
        num_unpadded_tokens=int(graph.num_unpadded_tokens) if graph is not None else None,
        num_padded_tokens=int(graph.num_padded_tokens) if graph is not None else None,
        flops=float(perf.num_flops_per_gpu) if perf is not None else None,
        read_bytes=float(perf.num_read_bytes_per_gpu) if perf is not None else None,
        write_bytes=float(perf.num_write_bytes_per_gpu) if perf is not None else None,
    )
