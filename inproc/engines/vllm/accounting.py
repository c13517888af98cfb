"""vLLM's per-step accounting: only what inproc reads is kept, and it is switched at run time.

With stat logging on (``disable_log_stats=False``, vLLM's default and what the anatomy
needs), vLLM accounts for every step in two places:

- the EngineCore's scheduler: ``SchedulerStats`` (prefix-cache queries and hits,
  speculative drafts), with ``CUDAGraphStat`` (``--cudagraph-metrics``) and ``PerfStats``
  (``--enable-mfu-metrics``) inside. The probe reads these (``probe.py``): inproc keeps them;
- ``LLMEngine``'s front end: an ``IterationStats`` per step, per-request timing stats in
  its output processor, and the default stat loggers (``LoggingStatLogger``,
  ``PrometheusStatLogger``), which record every step. inproc reads none of it, and under
  ``vllm serve`` all of it runs in the API server's process, off the engine's step; here
  it would run inside ``Engine.step()``. :func:`drop_unread_stats` removes it after build.

``LLMEngine.from_engine_args`` takes custom stat loggers but always adds the default ones
when stat logging is on, so they are removed after build rather than never made.

What stays is switched between three levels (:class:`AccountingSwitch`). The headline
window runs at :data:`HEADLINE`: ``SchedulerStats`` (the prefix-cache and speculative
counters the headline's figures read) and ``CUDAGraphStat`` (a small record per forward:
each step's graph mode and padding). ``PerfStats`` and the probe's batch shapes, most of
the cost (about 65 of 76 CPU µs per step at C = 1, docs/measurements.md), run only at
:data:`ANATOMY`, in the anatomy's own pass after the window (``inproc.run.decode``).
"""
from __future__ import annotations

OFF, SERVE, HEADLINE, ANATOMY = "off", "serve", "headline", "anatomy"
LEVELS = (OFF, SERVE, HEADLINE, ANATOMY)


def drop_unread_stats(llm_engine) -> None:
    """Stop ``LLMEngine``'s front-end accounting (loggers, iteration and request stats); the scheduler's stays."""
    llm_engine.logger_manager = None  # step(): no record() and no periodic log() of the default loggers
    llm_engine.log_stats = False  # step(): no IterationStats
    processor = llm_engine.output_processor
    processor.log_stats = False  # requests added from now on carry no RequestStateStats
    lora_states = getattr(processor, "lora_states", None)
    if lora_states is not None:
        lora_states.log_stats = False


class AccountingSwitch:
    """Sets the per-step accounting of an engine built with ``--anatomy on`` to one of :data:`LEVELS`.

    - :data:`OFF`: what ``--anatomy off`` builds with stat logging off: no ``SchedulerStats``,
      no ``CUDAGraphStat``, no ``PerfStats``, no batch shapes in the probe;
    - :data:`SERVE`: what ``vllm serve`` runs by default (stat logging on, the two metrics off):
      ``SchedulerStats`` only. What inproc adds to it is its own cost;
    - :data:`HEADLINE`: ``SchedulerStats`` and ``CUDAGraphStat``; no ``PerfStats``, no batch shapes;
    - :data:`ANATOMY`: everything the build turned on.

    Switch only between steps.
    """

    def __init__(self, engine) -> None:
        self._scheduler, self._probe = engine._scheduler, engine._probe
        self._observability = engine._engine.vllm_config.observability_config
        self._perf_metrics = self._scheduler.perf_metrics
        if not (self._scheduler.log_stats and self._perf_metrics is not None and self._probe.shapes):
            raise ValueError("AccountingSwitch needs an engine built with --anatomy on")
        self.level = ANATOMY

    def set(self, level: str) -> None:
        if level not in LEVELS:
            raise ValueError(f"accounting level {level!r}: one of {', '.join(LEVELS)}")
        full = level == ANATOMY
        self._scheduler.log_stats = level != OFF  # make_stats() returns None when off
        self._observability.cudagraph_metrics = level in (HEADLINE, ANATOMY)  # read by the model runner at every forward
        self._scheduler.perf_metrics = self._perf_metrics if full else None
        self._probe.shapes = full
        self.level = level
