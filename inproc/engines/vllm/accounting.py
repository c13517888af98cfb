"""vLLM's per-step accounting: only what inproc reads is kept, and it can be switched at run time.

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
"""
from __future__ import annotations


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
    """Turns off, and on again, the per-step accounting the anatomy reads, in an engine built with it on.

    Off is what ``--anatomy off`` builds with stat logging off: no ``SchedulerStats``, no
    ``CUDAGraphStat``, no ``PerfStats``, no batch shapes in the probe. Used to measure
    what the accounting costs inside one engine, in alternating blocks of steps
    (``scripts/bench_anatomy.py``); switch only between steps.
    """

    def __init__(self, engine) -> None:
        self._scheduler, self._probe = engine._scheduler, engine._probe
        self._observability = engine._engine.vllm_config.observability_config
        self._perf_metrics = self._scheduler.perf_metrics
        if not (self._scheduler.log_stats and self._perf_metrics is not None and self._probe.shapes):
            raise ValueError("AccountingSwitch needs an engine built with --anatomy on")
        self.on = True

    def set(self, on: bool) -> None:
        self._scheduler.log_stats = on  # make_stats() returns None when off
        self._scheduler.perf_metrics = self._perf_metrics if on else None
        self._observability.cudagraph_metrics = on  # read by the model runner at every forward
        self._probe.shapes = on
        self.on = on
