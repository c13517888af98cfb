"""One entry of the matrix: drive the engine, then derive figures and verdict (``inproc.record.derive``).

These functions measure and nothing else. An engine failure inside one is raised as
:class:`EntryFailed` carrying the Error entry (with whatever was measured before it);
the runner records it, brings the engine back and goes on.
"""
from __future__ import annotations

import shlex
import time

from inproc.engines.base import Engine
from inproc.measure.judge import Verdict
from inproc.measure.peaks import Peaks
from inproc.plan.acceptance import Acceptance, flag_args
from inproc.plan.matrix import CellPlan
from inproc.plan.prompts import CellPrompts, PromptFactory, prefill_prompt
from inproc.record import derive
from inproc.record.schema import DecodeEntry, PrefillEntry, RunPlan
from inproc.run.decode import ANATOMY_STEPS
from inproc.run.driver import DecodeSettings, Driver
from inproc.run.interrupt import RunInterrupted
from inproc.run.profiling import DebugSettings
from inproc.telemetry.sampler import DEFAULT_HZ
from inproc.telemetry.window import EntrySampling
from inproc.types import Capacity, RequestSpec


class EntryFailed(Exception):
    """The engine raised inside an entry; ``entry`` is its Error record."""

    def __init__(self, error: Exception, entry: PrefillEntry | DecodeEntry) -> None:
        super().__init__(str(error))
        self.error, self.entry = error, entry


def measure_prefill(driver: Driver, sampling: EntrySampling, prompts: PromptFactory, context: int,
                    plan: RunPlan) -> PrefillEntry:
    """Cold-prefill samples at ``context`` until the sample count or the time budget is reached."""
    s = plan.settings
    samples, t_start = [], time.perf_counter()
    try:
        with sampling.sampling():
            while True:
                prompt = prefill_prompt(prompts, context, len(samples), s.prompt_mode, s.suffix_tokens)
                samples.append(driver.prefill_sample(prompt, s.temperature))
                if len(samples) >= s.prefill_samples or time.perf_counter() - t_start >= s.prefill_budget_s:
                    break
    except RunInterrupted:
        raise
    except Exception as e:  # noqa: BLE001 - any engine failure becomes an Error entry
        raise EntryFailed(e, PrefillEntry(context, derive.error_verdict(e), tuple(samples), error=repr(e))) from e
    return derive.prefill_entry(context, samples, sampling.trace)


def measure_decode(driver: Driver, sampling: EntrySampling, prompts: PromptFactory, cell: CellPlan, plan: RunPlan,
                   capacity: Capacity, reproduce: str, peaks: Peaks | None = None, primed: bool = False,
                   debug: DebugSettings | None = None, forced: Acceptance | None = None) -> DecodeEntry:
    """A decode cell: drive C requests through the window, then figures and verdict.

    ``primed``: the row's shared context is already in the prefix cache (see ``Driver.decode_cell``).
    ``forced``: the acceptance forced on the engine, recorded in the cell for its drafts to be held against.
    """
    s = plan.settings
    if cell.pre_status:
        return derive.unmeasured_entry(cell, s.prompt_mode, reproduce, Verdict(cell.pre_status, cell.pre_reason, ()))
    cell_prompts = CellPrompts(prompts, cell.context, cell.concurrency, s.prompt_mode, s.suffix_tokens)
    settings = DecodeSettings(cell.concurrency, s.window_s, cell.max_tokens, s.temperature, window_steps=s.window_steps,
                              anatomy_steps=ANATOMY_STEPS if s.anatomy else 0, kernel_steps=s.kernel_pass_steps)
    try:
        with sampling.sampling():
            trace = driver.decode_cell(cell_prompts, settings, primed, debug)
        trace.forced_acceptance_length = forced.mean_length if forced is not None else None
    except RunInterrupted:
        raise
    except Exception as e:  # noqa: BLE001
        failed = derive.unmeasured_entry(cell, s.prompt_mode, reproduce, derive.error_verdict(e), repr(e))
        raise EntryFailed(e, failed) from e
    return derive.decode_entry(cell, s.prompt_mode, reproduce, trace, sampling.trace, capacity, plan.loops, peaks,
                               s.anatomy)


def warm_up(driver: Driver, engine: Engine, prompts: PromptFactory, batch: int, temperature: float = 1.0) -> float:
    """One short request, then one batch of ``batch`` requests, then a prefix-cache reset; returns seconds.

    The requests sample at the plan's ``temperature``, so the warm-up takes the cells' sampling
    path (an engine whose sampler is fixed at build refuses another one).

    First calls pay one-off costs (kernel JIT, allocator growth, lazy imports) that belong
    to no cell. The time is recorded as ``engine.warmup_s``; no figure comes from it.
    """
    t0 = time.perf_counter()
    driver.run_to_completion(prompts.tokens(64, "warmup"), 8, temperature)
    for i in range(batch):
        engine.add_request(RequestSpec(f"warmup-{i}", prompts.tokens(64, "warmup", i), 8, temperature))
    driver.drain()
    driver.cold_start()
    return time.perf_counter() - t0


def reproduce_command(profile_path: str, overrides: tuple[str, ...], plan: RunPlan, cell: CellPlan,
                      acceptance: Acceptance | None = None) -> str:
    """The ``inproc cell`` command that measures this cell again: same seed, every flag that changes a figure or status.

    The flags left out (--step-timeout, --profile, --nvtx, --out) change no figure; the
    profile supplies the [matrix] values that have no flag.
    """
    s = plan.settings
    parts = ["inproc", "cell", profile_path, "--context", str(cell.context), "--concurrency", str(cell.concurrency),
             "--duration", f"{s.window_s:g}", "--max-output", str(s.max_output), "--prompt-mode", s.prompt_mode,
             "--temperature", f"{s.temperature:g}", "--seed", str(plan.seed)]
    if s.window_steps:
        parts += ["--window-steps", str(s.window_steps)]
    if not s.anatomy:
        parts += ["--anatomy", "off"]
    if not plan.loops.enabled:
        parts += ["--no-loop-check"]
    hz = plan.telemetry_hz or 0.0  # None: sampling was off
    if hz != DEFAULT_HZ:
        parts += ["--telemetry-hz", f"{hz:g}"]
    for item in overrides:
        parts += ["--set", item]
    parts += flag_args(acceptance)
    if plan.prompts is not None:
        parts += ["--prompts", plan.prompts.file, "--tokenizer", plan.prompts.tokenizer]
    return shlex.join(parts)
