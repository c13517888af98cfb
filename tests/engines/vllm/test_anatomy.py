"""Step anatomy on the real vLLM engine, with and without async scheduling: every figure from the engine's own records."""
from __future__ import annotations

import numpy as np
import pytest

from inproc import types as st
from inproc.measure import anatomy as an
from inproc.measure import metrics as m
from inproc.plan.matrix import CellPlan
from inproc.plan.prompts import CellPrompts, PromptFactory
from inproc.record import derive
from inproc.measure.loops import LoopSettings
from inproc.run.driver import DecodeSettings, Driver
from tests.conftest import needs_vllm

pytestmark = needs_vllm


@pytest.fixture(params=["sync", "async"])
def stepped(request, vllm_engine):
    """(engine, driver, prompts, per-batch PerfStats as vLLM computed them) for each scheduling mode."""
    engine = vllm_engine if request.param == "sync" else request.getfixturevalue("async_vllm_engine")
    metrics = engine._accounting._perf_metrics  # what the anatomy pass switches in (None between passes)
    computed = []  # (adapter step that formed the batch, PerfStats) in the order vLLM computed them
    original = metrics.get_step_perf_stats_per_gpu

    def record(scheduler_output):
        stats = original(scheduler_output)
        computed.append((getattr(scheduler_output, "_inproc_step", None), stats))
        return stats

    metrics.get_step_perf_stats_per_gpu = record
    driver = Driver(engine)
    driver.drain()
    info = engine.info
    yield engine, driver, PromptFactory(info.vocab_size, 77, info.special_token_ids), computed
    metrics.get_step_perf_stats_per_gpu = original
    driver.drain()


def test_tokens_batches_and_engine_accounting_agree(stepped):
    engine, driver, prompts, computed = stepped
    first_step = engine._probe.step
    trace = driver.decode_cell(CellPrompts(prompts, 256, 4, "distinct", 16), DecodeSettings(4, 1.0, 2000, anatomy_steps=24))
    s, w = trace.steps, m.window(trace)
    a = m.anatomy_window(trace, w)
    # The pass starts after the step that closed the time window (which ended past it, so is in neither).
    assert a.first_step == w.last_step + 2 and a.last_step - a.first_step + 1 == min(24, w.last_step - w.first_step + 1)
    lag = 1 if engine.info.settings.async_scheduling else 0
    rows = np.arange(w.first_step, w.last_step + 1)
    # Formed by the pass's steps; the first batch the pass returns under async scheduling was formed in the window.
    pass_rows = np.arange(a.first_step + lag, a.last_step + 1)
    assert (s.output_of[rows] == rows - lag).all() and (s.output_of[pass_rows] == pass_rows - lag).all()
    # The window ran without the anatomy's accounting: no PerfStats and no batch shapes, but its
    # CUDAGraphStat (each step's graph mode) and SchedulerStats (the counters) were kept.
    assert np.isnan(s.read_bytes[rows]).all() and (s.num_decode_reqs[rows] == -1).all()
    assert (s.graph_mode[rows] == st.GRAPH_MODES.index("NONE")).all()  # no CUDA graphs on the CPU
    assert {"prefix_queries", "prefix_hits"} <= set(trace.counters_end.to_dict())
    # In the pass, every token is filed under exactly one batch: a steady pass returns, at each
    # step, one token per decode request of the batch that produced it.
    returned = np.zeros(len(s), dtype=np.int64)
    for r in trace.requests:
        np.add.at(returned, np.asarray(r.token_steps), np.asarray(r.token_counts))
    formed = s.output_of[pass_rows]
    assert (returned[pass_rows] == s.num_decode_tokens[formed]).all() and returned[pass_rows].sum() > 0
    # Σ unpadded tokens of the pass's batches = tokens the scheduler scheduled in them.
    # (Under async scheduling the pass's last batch returns after the cell: its stats are not known.)
    unpadded, scheduled = s.num_unpadded_tokens[a.first_step:a.last_step + 1], s.num_scheduled_tokens[a.first_step:a.last_step + 1]
    known = unpadded >= 0
    assert (~known).sum() <= lag and unpadded[known].sum() == scheduled[known].sum() and an.scheduled_tokens(s, a) == scheduled.sum()
    # Read bytes per batch are exactly vLLM's PerfStats, batch by batch, in order: computed in the pass only.
    mine = s.read_bytes[s.known("read_bytes")]
    theirs = [p.num_read_bytes_per_gpu for tag, p in computed if tag is not None and tag > first_step]
    assert mine.tolist() == theirs[: len(mine)] and len(mine) >= len(pass_rows)
    assert (s.flops[formed] > 0).all() and (s.write_bytes[formed] > 0).all()
    host = an.host_overhead_fraction(s, a)
    assert 0 < host < 1 and (s.probe_s[rows] < s.t_end_s[rows] - s.t_start_s[rows]).all()


def test_a_cell_that_preempts_says_so(vllm_engine, driver, prompts):
    # 4 prompts of 1,530 tokens take all 192 blocks (48 each); their growth cannot fit, so the
    # engine preempts. The capacity check (which marks this cell Over capacity) is bypassed.
    cell = CellPlan(1530, 4, 1024, None)
    trace = driver.decode_cell(CellPrompts(prompts, 1530, 4, "distinct", 16), DecodeSettings(4, 3.0, 1024))
    entry = derive.decode_entry(cell, "distinct", "", trace, None, vllm_engine.info.capacity, LoopSettings())
    assert entry.figures.preemptions == an.preemptions(trace.steps, m.window(trace)) > 0
    assert entry.status == st.QUEUED
    assert f"KV cache preemption ({entry.figures.preemptions} preemptions in the window)" in entry.reason


def test_vllm_keeps_only_the_accounting_inproc_reads(vllm_engine, driver, prompts, monkeypatch):
    from vllm.v1.metrics import loggers

    llm = vllm_engine._engine
    assert llm.logger_manager is None and not llm.log_stats and not llm.output_processor.log_stats
    # Between cells, the headline's level: SchedulerStats on, PerfStats off (the anatomy's pass turns it on).
    assert vllm_engine._scheduler.log_stats and vllm_engine._scheduler.perf_metrics is None
    recorded = []  # any stat logger vLLM has, however it came back: its record() is called at every step
    for cls in (loggers.StatLoggerManager, loggers.StatLoggerBase, loggers.AggregateStatLoggerBase,
                loggers.LoggingStatLogger, loggers.PrometheusStatLogger):
        if "record" in vars(cls):
            monkeypatch.setattr(cls, "record", lambda self, *a, **k: recorded.append(type(self).__name__))
    made = []
    process = llm.output_processor.process_outputs
    monkeypatch.setattr(llm.output_processor, "process_outputs", lambda outs, *a, **k: (
        made.extend(st_.stats for st_ in llm.output_processor.request_states.values()), process(outs, *a, **k))[1])
    trace = driver.decode_cell(CellPrompts(prompts, 128, 3, "distinct", 16),
                               DecodeSettings(3, 0.5, 1024, window_steps=8, anatomy_steps=16))
    s = trace.steps
    assert not recorded and made and all(x is None for x in made)  # no logger, no request stats
    a = m.anatomy_window(trace, m.window(trace))
    rows = slice(a.first_step + 1, a.last_step + 1)  # formed in the pass (the first may return a window batch)
    # The anatomy has its figures on every step of its pass (a request the engine ends early is refilled,
    # so a step may batch a prefill beside fewer decodes).
    assert (s.flops[rows] > 0).all() and (s.num_decode_reqs[rows] >= 1).all() and np.median(s.num_decode_reqs[rows]) == 3
    assert {"prefix_queries", "prefix_hits"} <= set(vllm_engine.counters().to_dict())
    assert vllm_engine._scheduler.perf_metrics is None  # off again after the pass


def test_the_accounting_switches_between_its_levels_inside_one_engine(vllm_engine, driver, prompts):
    from inproc.engines.vllm.accounting import ANATOMY, HEADLINE, OFF

    switch = vllm_engine._accounting
    cell = lambda: driver.decode_cell(CellPrompts(prompts, 128, 2, "distinct", 16), DecodeSettings(2, 0.3, 1024))  # noqa: E731
    try:
        switch.set(OFF)
        off = cell().steps
        assert (off.num_prefill_reqs == -1).all() and np.isnan(off.read_bytes).all() and (off.graph_mode == -1).all()
        assert set(vllm_engine.counters().to_dict()) == {"generation_tokens"}
        switch.set(ANATOMY)
        trace = cell()
        on, w = trace.steps, m.window(trace)
        rows = slice(w.first_step, w.last_step + 1)
        assert (on.num_decode_reqs[rows] >= 1).all() and np.median(on.num_decode_reqs[rows]) == 2
        assert (on.flops[rows] > 0).all()
    finally:
        switch.set(HEADLINE)
    head = cell().steps
    assert (head.num_prefill_reqs == -1).all() and np.isnan(head.read_bytes).all() and (head.graph_mode >= 0).any()
    assert {"prefix_queries", "prefix_hits"} <= set(vllm_engine.counters().to_dict())


@pytest.fixture(scope="module")
def bare_vllm_engine():
    """The default profile's engine built with ``--anatomy off`` and the profile's stat logging off."""
    import dataclasses

    from inproc import engines
    from inproc.profiles.spec import load_profile
    from tests.conftest import DEFAULT_PROFILES

    profile = load_profile(DEFAULT_PROFILES["vllm"]).with_overrides(("disable-log-stats=true",))
    engine = engines.build_engine(dataclasses.replace(profile.launch, anatomy=False))
    yield engine
    engine.shutdown()


@pytest.mark.ends_session_engine  # its second engine's shutdown tears down the process groups the session engine shares
def test_anatomy_off_builds_vllm_as_its_arguments_say(vllm_engine, bare_vllm_engine):
    on, off = vllm_engine, bare_vllm_engine
    for engine, flag in ((on, True), (off, False)):
        obs = engine._engine.vllm_config.observability_config
        assert obs.cudagraph_metrics is flag and obs.enable_mfu_metrics is flag
        assert (engine._accounting is not None) is flag  # on: PerfStats kept for the anatomy's own pass
        assert engine._scheduler.log_stats is flag  # on: forced on; off: the profile's --disable-log-stats kept
        assert engine._engine.logger_manager is None and not engine._engine.log_stats  # the front end's: never kept
    # Counters vLLM reports only through its SchedulerStats are absent, not zero.
    assert {"prefix_queries", "prefix_hits"} <= set(on.counters().to_dict()) and set(off.counters().to_dict()) == {"generation_tokens"}
    info = off.info
    trace = Driver(off).decode_cell(CellPrompts(PromptFactory(info.vocab_size, 5, info.special_token_ids), 256, 3,
                                                "distinct", 16), DecodeSettings(3, 1.0, 64, anatomy_steps=8))
    assert trace.anatomy_pass is None  # nothing to switch on: no pass
    s, w = trace.steps, m.window(trace)
    assert m.output_tokens(trace, w) > 0 and (s.num_running[w.first_step:w.last_step + 1] == 3).all()
    assert (s.num_prefill_reqs == -1).all() and np.isnan(s.read_bytes).all() and (s.graph_mode == -1).all()
    entry = derive.decode_entry(CellPlan(256, 3, 64, None), "distinct", "", trace, None, info.capacity, LoopSettings(),
                                anatomy=False)
    assert entry.figures.anatomy is None and entry.figures.total_tok_s > 0
