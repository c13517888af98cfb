"""transformers' continuous batching, stepped one iteration at a time from inproc's own thread.

transformers runs its loop in a background thread (``ContinuousBatchingManager.start``); inproc
starts no thread. It builds the manager's batch processor (``_create_batch_processor``) and runs
the loop's body itself, one call per :meth:`TransformersEngine.step`:
``prepare_next_batch()`` (take new requests and cancellations from the manager's queues, schedule,
allocate blocks, pad), ``manager._generation_step()`` (forward, sampling) and ``update_batch()``
(each request's new token, finished requests freed). What the step formed is read from the
engine's own objects: the scheduler's waiting and active requests, the batch's
``FutureRequestState`` list, the token counts its ``schedule_batch`` returned and the padded
size ``model_runner.maybe_pad_inputs`` chose, the cache's block tables (``kv.py``).
"""
from __future__ import annotations

import logging
import os
import time
from typing import Sequence

from inproc.engines.base import EngineBuildError, files_under
from inproc.engines.flags import error_text
from inproc.engines.pieces import require
from inproc.engines.transformers import kv
from inproc.engines.transformers.args import TransformersArgs
from inproc.engines.transformers.build import build_manager
from inproc.engines.transformers.info import read_info
from inproc.errors import UsageError
from inproc.types import BatchShape, EngineCounters, ForwardStats, LaunchSpec, RequestDelta, RequestSpec, StepResult


# What the adapter reads on the manager and its batch processor.
NEEDED_MANAGER = ("_generation_step", "add_request", "cancel_request", "input_queue", "cancel_queue",
                  "output_router.output_queue", "generation_config")
NEEDED_PROCESSOR = ("prepare_next_batch", "update_batch", "inputs_and_outputs.requests_in_batch",
                    "model_runner.maybe_pad_inputs", "model_runner.use_cuda_graph_decode",
                    "model_runner.use_cuda_graph_varlen", "scheduler.schedule_batch", "scheduler.waiting_requests",
                    "scheduler.active_requests", "scheduler.max_requests_per_batch", "cache.num_blocks",
                    "cache.max_batch_tokens", "cache.use_prefix_sharing")


class _Taps:
    """What the engine's own calls returned inside one step: the scheduled and the padded token counts."""

    def __init__(self, scheduler, runner) -> None:
        self.scheduled_tokens = -1
        self.padded_tokens: int | None = None
        schedule, pad = scheduler.schedule_batch, runner.maybe_pad_inputs

        def schedule_batch(*a, **k):
            out = schedule(*a, **k)
            if out[0]:  # (requests, decode fast path, query tokens, KV read); None / [] when nothing was scheduled
                self.scheduled_tokens = int(out[2])
            return out

        def maybe_pad_inputs(num_q_tokens, *a, **k):
            out = pad(num_q_tokens, *a, **k)
            self.padded_tokens = int(out[0])
            return out

        scheduler.schedule_batch, runner.maybe_pad_inputs = schedule_batch, maybe_pad_inputs

    def clear(self) -> None:
        self.scheduled_tokens, self.padded_tokens = -1, None


class TransformersEngine:
    """A transformers ``ContinuousBatchingManager`` and its batch processor behind the Engine interface."""

    def __init__(self, manager, processor, args: TransformersArgs, on_cuda: bool, anatomy: bool = True,
                 temperature: float = 1.0) -> None:
        from inproc.engines.transformers import ADAPTER

        self._shapes = anatomy  # the batch's shape and forward stats per step; none with --anatomy off, as elsewhere

        for on, paths in ((manager, NEEDED_MANAGER), (processor, NEEDED_PROCESSOR)):
            for path in paths:
                require(ADAPTER, path, on=on)  # a version without one: one line at build, not inside a step
        self._manager, self._bp = manager, processor
        self._scheduler, self._cache = processor.scheduler, processor.cache
        self._on_cuda = on_cuda
        self._taps = _Taps(self._scheduler, processor.model_runner)
        # Tokens sampled for the engine's requests, counted by inproc from FutureRequestState.has_new_token
        # (transformers keeps no count of its own): the token check on this engine is inproc's own count.
        self._sampled = 0
        self._temperature = temperature  # the sampler the manager was built with (build.generation_config)
        self.info = read_info(manager, processor, args, on_cuda)

    # -- Engine interface --------------------------------------------------
    def add_request(self, spec: RequestSpec) -> None:
        """The request as the engine takes it; a sampling it cannot give this request is refused in one line."""
        if spec.temperature != self._temperature:
            raise UsageError(f"transformers' continuous batching samples every request at the temperature it was "
                             f"built with ({self._temperature:g}); request {spec.request_id!r} asks "
                             f"{spec.temperature:g}. Give one temperature for the run (--temperature).")
        if spec.seed is not None:
            raise UsageError(f"transformers' continuous batching takes no seed per request (request "
                             f"{spec.request_id!r} asks {spec.seed}); its sampling seed is the profile's seed "
                             f"(ContinuousBatchingConfig.seed).")
        # eos None: the engine's own (its generation config's, the model's EOS); -1: none ends the request.
        self._manager.add_request(input_ids=list(spec.prompt_token_ids), request_id=spec.request_id,
                                  max_new_tokens=spec.max_tokens, streaming=False,
                                  eos_token_id=-1 if spec.ignore_eos else None)

    def step(self) -> StepResult:
        bp, sched, taps = self._bp, self._scheduler, self._taps
        taps.clear()
        active_before = set(sched.active_requests)
        t0 = time.perf_counter()
        formed = bp.prepare_next_batch()
        t1 = time.perf_counter()
        waiting = sched.waiting_requests
        # The scheduler's own sets: an active request the batch left out (token budget) is still running.
        running = len(sched.active_requests)
        preempted = sum(rid in waiting for rid in active_before)  # offloaded back to the waiting queue
        if not formed:
            return StepResult((), running, len(waiting), 0, preempted, returned_lag=-1, schedule_s=t1 - t0,
                              kv_used_blocks=kv.used_blocks(self._cache))
        t_probe = time.perf_counter()
        batch = list(bp.inputs_and_outputs.requests_in_batch)
        had = [len(fs.state.generated_tokens) for fs in batch]
        shape = _shape(batch, had) if self._shapes else None
        used = kv.used_blocks(self._cache)
        probe_s = time.perf_counter() - t_probe
        self._manager._generation_step()
        t2 = time.perf_counter()
        bp.update_batch()
        t3 = time.perf_counter()
        deltas = []
        for fs, n in zip(batch, had):
            state = fs.state
            self._sampled += bool(fs.has_new_token)
            new = tuple(int(t) for t in state.generated_tokens[n:])
            done = state.status.name == "FINISHED"
            if new or done:
                deltas.append(RequestDelta(state.request_id, new, done, _finish_reason(state) if done else None))
        self._drain_outputs()
        convert_s = time.perf_counter() - t3
        return StepResult(
            deltas=tuple(deltas), num_running=running, num_waiting=len(waiting),
            num_scheduled_tokens=taps.scheduled_tokens, num_preempted=preempted, batch=shape, returned_lag=0,
            forward=ForwardStats(self._graph_mode(), taps.scheduled_tokens, taps.padded_tokens) if self._shapes else None,
            schedule_s=t1 - t0, update_s=t3 - t2, probe_s=probe_s, convert_s=convert_s, kv_used_blocks=used)

    def _graph_mode(self) -> str:
        """FULL where the path this batch took (decode block table, or varlen) runs as a CUDA graph."""
        runner = self._bp.model_runner
        decode = bool(getattr(self._bp.inputs_and_outputs, "use_block_table", False))
        graphed = runner.use_cuda_graph_decode if decode else runner.use_cuda_graph_varlen
        return "FULL" if graphed and self._on_cuda else "NONE"

    def _drain_outputs(self) -> None:
        """The finished requests' outputs the engine delivered (inproc reads the states; the queue would only grow)."""
        out = self._manager.output_router.output_queue
        while not out.empty():
            out.get_nowait()

    def abort(self, request_ids: Sequence[str]) -> None:
        for rid in request_ids:
            self._manager.cancel_request(rid)  # taken by the next prepare_next_batch

    def has_unfinished(self) -> bool:
        m = self._manager
        return bool(self._scheduler.has_pending_requests() or not m.input_queue.empty() or not m.cancel_queue.empty())

    def set_anatomy(self, on: bool) -> bool:
        return False  # the counts above are read at every step; nothing to switch

    def reset_prefix_cache(self) -> bool:
        if self.has_unfinished():
            return False
        kv.drop_prefix_cache(self._cache)
        return True

    def counters(self) -> EngineCounters:
        return EngineCounters(generation_tokens=self._sampled)

    def start_profile(self, kind: str, directory: str, with_stack: bool, name: str) -> None:
        """``cuda``: the CUDA profiler's range (for nsys/ncu); ``torch``: torch's profiler (``engines.torchprof``)."""
        import torch

        from inproc.engines.torchprof import start_trace

        self._profile_dir, self._profile_name = directory, name
        self._profile_before = files_under(directory)
        if kind == "cuda":
            torch.cuda.profiler.start()
            self._profiler = None
            return
        self._profiler = start_trace("cuda" if self._on_cuda else "cpu", with_stack)

    def stop_profile(self) -> tuple[str, ...]:
        import torch

        from inproc.engines.torchprof import stop_trace

        prof, self._profiler = self._profiler, None
        if prof is None:
            torch.cuda.profiler.stop()
            return ()
        stop_trace(prof, os.path.join(self._profile_dir, f"{self._profile_name}.pt.trace.json"))
        return tuple(sorted(files_under(self._profile_dir) - self._profile_before))

    def kernel_profiler(self, trace_dir: str, name: str):
        """torch's profiler in this process, on the model's device (the model runs here, in this thread)."""
        from inproc.engines.torchprof import KernelProfiler

        return KernelProfiler("cuda" if self._on_cuda else "cpu", trace_dir, name)

    def shutdown(self) -> None:
        manager, self._manager = self._manager, None
        if manager is None:
            return
        self._bp = self._scheduler = self._cache = None
        manager.batch_processor = None
        import gc

        gc.collect()


def _finish_reason(state) -> str:
    """From the engine's request state: "stop" when its last token is one of the request's EOS ids, else
    "length" (the engine finishes a request on EOS or on its token budget, RequestState.update_and_check_completion)."""
    tokens = state.generated_tokens
    return "stop" if tokens and tokens[-1] in getattr(state, "_eos_token_ids", ()) else "length"


def _shape(batch: list, had: list[int]) -> BatchShape:
    """Prefill: a request with no output token yet (its prompt, or a chunk of it); decode: the rest."""
    pre = [fs.query_length for fs, n in zip(batch, had) if n == 0]
    dec = [fs.query_length for fs, n in zip(batch, had) if n > 0]
    return BatchShape(len(pre), int(sum(pre)), len(dec), int(sum(dec)))


def build_transformers_engine(launch: LaunchSpec) -> TransformersEngine:
    """Build the model and its continuous-batching manager in this process, from the profile's arguments."""
    from inproc.engines.transformers import ADAPTER
    from inproc.engines.transformers.args import parse_profile

    ADAPTER.quiet()
    args = parse_profile(launch.model, dict(launch.engine_args))
    temperature = 1.0 if launch.temperature is None else float(launch.temperature)
    try:
        manager, processor, on_cuda = build_manager(args, temperature)
    except (ValueError, RuntimeError, OSError) as e:
        raise EngineBuildError(f"transformers could not build the engine: {error_text(e)}") from e
    logging.getLogger("ContinuousBatchingLogger").setLevel(logging.ERROR)
    return TransformersEngine(manager, processor, args, on_cuda, anatomy=launch.anatomy, temperature=temperature)
