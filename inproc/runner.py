"""Runs a plan on one engine: the prefill row, then every decode cell, saving after each.

One engine is built per run and reused by every cell. A cell that raises is recorded as
Error and the matrix goes on; if the engine cannot be brought back to idle it is
rebuilt, and the run's notes say so. The results file is rewritten atomically after
every entry, so an interrupted run loses at most the cell in progress.
"""
from __future__ import annotations

import shlex
import time
from dataclasses import asdict, dataclass
from typing import Callable

from inproc import metrics as m
from inproc import status as st
from inproc.cell_telemetry import CellTelemetry
from inproc.driver import DecodeSettings, Driver
from inproc.engines import Engine, build_engine
from inproc.engines.base import RequestSpec
from inproc.figures import decode_figures, prefill_figures
from inproc.interrupt import RunInterrupted
from inproc.loops import LoopSettings, judge_cell_loops
from inproc.judge import judge_decode, judge_prefill
from inproc.plan import CellPlan, MatrixPlan
from inproc.profile import Profile
from inproc.prompts import CellPrompts, PromptFactory
from inproc.results import DecodeEntry, PrefillEntry, RunRecord, write_atomic

Progress = Callable[[str], None]


@dataclass
class RunContext:
    """What a run needs besides the plan: where to save, how to report progress."""

    profile: Profile
    out_path: str | None
    progress: Progress = lambda line: None
    should_stop: Callable[[], bool] = lambda: False  # Ctrl-C requested
    live: bool = False  # progress goes to a terminal: show a ticking status line in cells
    loops: LoopSettings = LoopSettings()


def reproduce_command(profile: Profile, plan: MatrixPlan, cell: CellPlan) -> str:
    """The ``inproc cell`` command that measures this cell again, same seed and settings."""
    s = plan.settings
    parts = ["inproc", "cell", profile.path or profile.name, "--context", str(cell.context),
             "--concurrency", str(cell.concurrency), "--duration", f"{s.window_s:g}", "--max-output", str(s.max_output),
             "--prompt-mode", s.prompt_mode, "--temperature", f"{s.temperature:g}", "--seed", str(plan.seed)]
    for item in profile.overrides:
        parts += ["--set", item]
    return shlex.join(parts)


class Runner:
    """Measures a :class:`MatrixPlan` with one in-process engine."""

    def __init__(self, ctx: RunContext, engine: Engine, plan: MatrixPlan, record: RunRecord, telemetry=None) -> None:
        self.ctx, self.engine, self.plan, self.record = ctx, engine, plan, record
        self._current = ""  # the cell in progress, for live status lines
        self.driver = self._driver(engine)
        self.telemetry = CellTelemetry(telemetry)
        info = engine.info
        self.prompts = PromptFactory(info.vocab_size, plan.seed, info.special_token_ids)

    def _driver(self, engine: Engine) -> Driver:
        cell_line = lambda text: self.ctx.progress(f"{self._current}{text}")  # noqa: E731
        return Driver(engine, should_stop=self.ctx.should_stop, ticker=cell_line if self.ctx.live else None)

    def save(self) -> None:
        if self.ctx.out_path:
            write_atomic(self.ctx.out_path, self.record)

    # -- prefill ---------------------------------------------------------
    def run_prefill(self, context: int) -> PrefillEntry:
        s = self.plan.settings
        samples, t_start = [], time.perf_counter()
        try:
            with self.telemetry.sampling():
                while True:
                    prompt = self.prompts.tokens(context, "prefill", context, len(samples))
                    samples.append(self.driver.prefill_sample(prompt))
                    if len(samples) >= s.prefill_samples or time.perf_counter() - t_start >= s.prefill_budget_s:
                        break
        except RunInterrupted:
            raise
        except Exception as e:  # noqa: BLE001 - any engine failure becomes an Error entry
            self._recover(e)
            return PrefillEntry(context, st.ERROR, f"{type(e).__name__}: {e}", samples=samples, error=repr(e))
        figs = prefill_figures(samples)
        v = judge_prefill(figs)
        # Telemetry window: the first sample's submit to the last sample's first token.
        first, last = samples[0], samples[-1]
        tel, _ = self.telemetry.judge(first.clock_origin_s + first.requests[0].submit_s,
                                      last.clock_origin_s + (m.prefill_ttft_s(last) or 0) + last.requests[0].submit_s, None)
        return PrefillEntry(context, v.status, v.reason, figs, samples, v.checks_passed, extra={"telemetry": tel} if tel else {})

    # -- decode ----------------------------------------------------------
    def run_cell(self, cell: CellPlan) -> DecodeEntry:
        s = self.plan.settings
        base = dict(context=cell.context, concurrency=cell.concurrency, max_tokens=cell.max_tokens,
                    prompt_mode=s.prompt_mode, reproduce=reproduce_command(self.ctx.profile, self.plan, cell),
                    capacity_check=cell.capacity.to_dict() if cell.capacity else None)
        if cell.pre_status:
            return DecodeEntry(status=cell.pre_status, reason=cell.pre_reason, **base)
        prompts = CellPrompts(self.prompts, cell.context, cell.concurrency, s.prompt_mode, s.suffix_tokens)
        settings = DecodeSettings(cell.concurrency, s.window_s, cell.max_tokens, s.temperature)
        try:
            with self.telemetry.sampling():
                trace = self.driver.decode_cell(prompts, settings)
        except RunInterrupted:
            raise
        except Exception as e:  # noqa: BLE001
            self._recover(e)
            return DecodeEntry(status=st.ERROR, reason=f"{type(e).__name__}: {e}", error=repr(e), **base)
        figs = decode_figures(trace)
        v = judge_decode(figs, cell.concurrency, self.engine.info.capacity, self._looped(trace))
        extra, checks = {}, v.checks_passed
        w = m.window(trace)
        if w is not None:
            tel, throttle_ok = self.telemetry.judge(trace.clock_origin_s + w.open_s, trace.clock_origin_s + w.close_s,
                                                     figs.output_tokens)
            if tel:
                extra["telemetry"] = tel
                if throttle_ok:
                    checks = checks + ("not_throttled",)
                elif throttle_ok is False:
                    extra["throttled"] = tel["throttle"]["reason"]  # kept and flagged, not a status
        return DecodeEntry(status=v.status, reason=v.reason, figures=figs, trace=trace, checks_passed=checks,
                           extra=extra, **base)

    def _looped(self, trace) -> str:
        """The loop detector's reason over every request's output ids ("" when none looped)."""
        return judge_cell_loops(trace.requests, self.ctx.loops)

    def _recover(self, error: Exception) -> None:
        """After a failure: back to idle, or rebuild the engine if that is impossible."""
        try:
            self.driver.drain(max_steps=10_000)
            return
        except Exception:  # noqa: BLE001 - the engine is beyond use; build a new one
            pass
        try:
            self.engine.shutdown()
        except Exception:  # noqa: BLE001
            pass
        self.engine = build_engine(self.ctx.profile)
        self.driver = self._driver(self.engine)
        self.record.notes.append(f"engine rebuilt after {type(error).__name__}: {error}")

    # -- the whole matrix --------------------------------------------------
    def warm_up(self) -> None:
        """One short request, then one batch at the largest planned concurrency, before measuring.

        First calls pay one-off costs (kernel JIT, allocator growth, lazy imports) that belong
        to no cell. The time is recorded under ``engine.warmup_s``; no figure is taken from it.
        Runs once per engine.
        """
        if "warmup_s" in self.record.engine:
            return
        t0 = time.perf_counter()
        self.driver.run_to_completion(self.prompts.tokens(64, "warmup"), 8)
        batch = min(max(self.plan.settings.concurrency), self.engine.info.capacity.max_num_seqs)
        for i in range(batch):
            self.engine.add_request(RequestSpec(f"warmup-{i}", self.prompts.tokens(64, "warmup", i), 8))
        self.driver.drain()
        self.driver.cold_start()
        self.record.engine["warmup_s"] = round(time.perf_counter() - t0, 3)

    def run(self) -> RunRecord:
        self.warm_up()
        done_prefill = {e.context for e in self.record.prefill}
        for context in self.plan.prefill_contexts:
            if context in done_prefill:
                continue
            self.ctx.progress(f"prefill {context:>8,} tokens ...")
            entry = self.run_prefill(context)
            self.record.prefill.append(entry)
            self.save()
            self.ctx.progress(_prefill_line(entry))
        done = {e.key for e in self.record.decode}
        for cell in self.plan.cells:
            if cell.key in done:
                continue
            if not cell.pre_status:
                self._current = f"decode  {cell.context:>8,} x {cell.concurrency:<3}"
                self.ctx.progress(f"{self._current} ...")
            entry = self.run_cell(cell)
            self.record.decode.append(entry)
            self.save()
            self.ctx.progress(_decode_line(entry))
        self.record.finished = True
        self.save()
        return self.record


def _prefill_line(e: PrefillEntry) -> str:
    f = e.figures
    if f is None or f.ttft_ms is None:
        return f"prefill {e.context:>8,}: {e.status} {e.reason}"
    return f"prefill {e.context:>8,}: {f.prompt_tok_s:,.0f} prompt tok/s, TTFT {f.ttft_ms:,.0f} ms, {f.steps} steps, {f.samples} samples  [{e.status}]"


def _decode_line(e: DecodeEntry) -> str:
    head = f"decode  {e.context:>8,} x {e.concurrency:<3}: "
    f = e.figures
    if f is None:
        return head + f"{e.status}: {e.reason}"
    extra = f"  ({e.reason})" if e.reason else ""
    return head + (f"{f.total_tok_s:,.1f} tok/s total, {f.output_tokens} tokens in {f.window_s:.1f} s, "
                   f"avg active {f.avg_active:.2f}  [{e.status}]{extra}")


def new_record(profile: Profile, plan: MatrixPlan, engine: Engine, command: str, machine: dict) -> RunRecord:
    """The header of a results file, before any cell."""
    import inproc

    info = engine.info
    return RunRecord(
        tool={"name": "inproc", "version": inproc.__version__},
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        command=command,
        profile={"name": profile.name, "path": profile.path, "engine": profile.engine, "model": profile.model,
                 "engine_args": profile.engine_args, "env": profile.env, "hardware": profile.hardware,
                 "notes": profile.notes, "gpus": profile.gpus, "overrides": list(profile.overrides)},
        plan=plan.to_dict(),
        engine={"name": info.name, "version": info.version, "model": info.model, "dummy_weights": info.dummy_weights,
                "vocab_size": info.vocab_size, "settings": info.settings},
        capacity=asdict(info.capacity),
        machine=machine,
    )
