"""One iteration of SGLang's event loop, the normal one or the overlap one, as SGLang runs it.

SGLang 0.5.23 picks its loop in ``dispatch_event_loop``: ``event_loop_overlap`` unless the
overlap schedule is off (``--disable-overlap-schedule``, or a setting SGLang turns it off
for), else ``event_loop_normal``. Each class here runs the body of one loop once per call,
calling the scheduler's own methods in the loop's own order, and says which batch's
result it processed:

- normal: the batch formed in this iteration (lag 0);
- overlap: a batch's result is processed one iteration later (lag 1), while the next
  batch runs: the iteration forms and launches batch k, then processes batch k-1's
  result (or first, when SGLang disables overlap for that pair of batches).
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from inproc.engines.sglang.anatomy import ForwardCost, batch_shape
from inproc.types import BatchShape, ForwardStats

LOOPS = ("normal", "overlap")


@dataclass
class Iteration:
    """What one loop iteration formed, and which earlier batch's result it processed."""

    batch: object = None  # the ScheduleBatch formed (None: idle)
    shape: BatchShape | None = None
    queues: dict[str, int] = field(default_factory=dict)  # StepResult's queue fields, at batch formation
    returned_lag: int = -1
    forward: ForwardStats | None = None
    schedule_s: float = 0.0  # ingest_requests + get_next_batch_to_run
    update_s: float = 0.0  # process_batch_result
    probe_s: float = 0.0  # this module's own bookkeeping


@dataclass
class _Pending:
    """A launched batch waiting for its result to be processed."""

    step: int
    forward: ForwardStats | None


@dataclass
class EventLoop:
    """Runs one iteration per :meth:`iterate`; ``step`` counts iterations."""

    scheduler: object
    cost: ForwardCost | None  # None: --anatomy off, no batch shapes or forward estimates
    overlap: bool
    step: int = 0
    _pending: deque = field(default_factory=deque)

    def __post_init__(self) -> None:
        s = self.scheduler
        if self.overlap:
            # What event_loop_overlap sets before its first iteration.
            s.enable_skip_finishing_decode = True
            s.result_queue = deque()

    @property
    def name(self) -> str:
        return LOOPS[self.overlap]

    def iterate(self) -> Iteration:
        self.step += 1
        s, it = self.scheduler, Iteration()
        # Last iteration's prefill batch joins running_batch only while this batch forms.
        was_running = {id(r) for b in (s.running_batch, s.last_batch) if b for r in b.reqs}
        t0 = time.perf_counter()
        s.ingest_requests()
        plan = s.get_next_batch_to_run(running_batch=s.running_batch, last_batch=s.last_batch)
        s.running_batch, batch = plan.running_batch, plan.batch_to_run
        s.cur_batch_for_debug = batch
        it.schedule_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        it.batch, it.shape = batch, batch_shape(batch) if batch and self.cost is not None else None
        it.queues = sample_queues(s, batch, was_running)
        it.probe_s += time.perf_counter() - t1
        (self._overlap if self.overlap else self._normal)(s, batch, it)
        s.last_batch = batch
        return it

    def _normal(self, s, batch, it: Iteration) -> None:
        if batch:
            result = s.run_batch(batch)
            self._launched(batch, it, result)
            self._process(s, batch, result, it)
        else:
            s._sched_idled = True
            s.on_idle()

    def _overlap(self, s, batch, it: Iteration) -> None:
        disable = s.is_disable_overlap_for_batch(batch, last_batch=s.last_batch)
        if disable:
            self._pop_and_process(s, it)
            if s.enable_unified_memory:
                try:
                    s.token_to_kv_pool_allocator.flush_opportunistic()
                except Exception:  # noqa: BLE001 - best effort, as in SGLang's loop
                    pass
        result = None
        if batch:
            result = s.run_batch(batch)
            s._apply_war_barrier()
            s.result_queue.append((batch.copy(), result))
            self._launched(batch, it, result)
        else:
            s._sched_idled = True
        if s.last_batch:
            if not disable:
                self._pop_and_process(s, it)
        elif batch is None:
            s.on_idle()
        if s.is_generation:
            s.launch_batch_sample_if_needed(result, batch)

    def _launched(self, batch, it: Iteration, result) -> None:
        t = time.perf_counter()
        forward = None if self.cost is None else \
            self.cost.forward(batch, it.shape, bool(getattr(result, "can_run_cuda_graph", False)))
        self._pending.append(_Pending(self.step, forward))
        it.probe_s += time.perf_counter() - t

    def _process(self, s, batch, result, it: Iteration) -> None:
        t = time.perf_counter()
        s.process_batch_result(batch, result)
        it.update_s += time.perf_counter() - t
        done = self._pending.popleft()
        it.returned_lag, it.forward = self.step - done.step, done.forward

    def _pop_and_process(self, s, it: Iteration) -> None:
        batch, result = s.result_queue.popleft()
        self._process(s, batch, result, it)


def sample_queues(s, batch, was_running: set[int]) -> dict[str, int]:
    """Queue lengths at batch formation, as StepResult fields."""
    running = {id(r) for r in s.running_batch.reqs}
    tokens = 0
    if batch:
        running.update(id(r) for r in batch.reqs)
        if batch.forward_mode.is_extend():
            tokens = int(batch.extend_num_tokens)
        elif batch.spec_algorithm.is_none():
            tokens = batch.batch_size()
        else:
            tokens = -1  # a verify step's token count depends on the draft tree
    return {
        **kv_used(s),
        "num_running": len(running),
        "num_waiting": len(s.waiting_queue),
        "num_scheduled_tokens": tokens,
        # Retraction (SGLang's preemption) sends running requests back to the waiting queue.
        "num_preempted": sum(1 for r in s.waiting_queue if id(r) in was_running),
    }


def kv_used(s) -> dict[str, int]:
    """Pages of the token pool (and of the hybrid sliding-window pool) requests hold, by SGLang's
    own count (``get_pool_stats``: capacity less available and radix-evictable tokens)."""
    stats, page = s.pool_stats_observer.get_pool_stats(), int(s.page_size)
    used = {"kv_used_blocks": -(-int(stats.full_num_used) // page)}
    if getattr(stats, "is_hybrid_swa", False) and stats.swa_num_used is not None:
        used["kv_used_window_blocks"] = -(-int(stats.swa_num_used) // page)
    return used
