"""Runs a plan on one engine: the prefill row, then every decode cell, saving after each.

The runner loops over the plan, saves, and reports progress; each entry is measured by
``inproc.run.cell``. A cell that raises is recorded as Error and the matrix goes on; if
the engine cannot be brought back to idle it is rebuilt, and the run's notes say so.
Each entry is written once, to its own cell file, as it is measured; the small manifest
only when its header changes and at the end (``inproc.record.write.ResultsWriter``). The loader
reads cell files the manifest does not list yet, so an interrupted run loses at most the
entry in progress.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import Callable

from inproc import types as st
from inproc.engines import build_engine
from inproc.engines.base import Engine
from inproc.measure.judge import Verdict
from inproc.plan.acceptance import Acceptance
from inproc.plan.matrix import MatrixPlan
from inproc.plan.prompts import PromptFactory
from inproc.plan.text import TextPrompts
from inproc.record import derive
from inproc.record.io import ResultsWriter
from inproc.record.schema import DecodeEntry, EarlierTry, PrefillEntry, RunRecord
from inproc.run.cell import EntryFailed, measure_decode, measure_prefill, reproduce_command
from inproc.run.driver import Driver
from inproc.run.failure import engine_stage
from inproc.run.profiling import DebugSettings
from inproc.run.progress import Progress
from inproc.run.watchdog import Hang, StepTimeout, StepWatchdog, WatchedEngine, stacks_path_for
from inproc.telemetry.sampler import Telemetry
from inproc.telemetry.window import EntrySampling
from inproc.types import LaunchSpec


@dataclass
class RunContext:
    """What a run needs besides the plan: what to rebuild, where to save, how to report."""

    launch: LaunchSpec  # rebuilds the engine after a failure it cannot recover from
    out_path: str | None
    progress: Progress
    should_stop: Callable[[], bool] = lambda: False  # Ctrl-C requested
    debug: DebugSettings = DebugSettings()  # profiler, NVTX, breakpoint: no figure depends on them
    step_timeout: StepTimeout = StepTimeout()  # the step watchdog (inproc.run.watchdog)
    retry_disturbed: int = 0  # a disturbed decode cell is measured again up to this many times
    text: TextPrompts | None = None  # --prompts: prompts cut from text instead of synthetic ids


class Runner:
    """Measures a :class:`MatrixPlan` with one in-process engine, appending to ``record``."""

    def __init__(self, ctx: RunContext, engine: Engine, plan: MatrixPlan, record: RunRecord,
                 telemetry: Telemetry | None = None) -> None:
        if ctx.text is not None:  # before anything is written: ids the model cannot take are one line; the header names the text
            ctx.text.check_vocab(engine.info.vocab_size)
            record = dataclasses.replace(record, plan=dataclasses.replace(record.plan, prompts=ctx.text.recorded()))
        self.ctx, self.engine, self.plan, self.record = ctx, engine, plan, record
        self.writer = ResultsWriter(ctx.out_path, record) if ctx.out_path else None
        self._save_lock, self._hung = threading.Lock(), False  # the watchdog's thread may save too
        self._current: tuple[str, object, str] | None = None  # (kind, plan item, reproduce) being measured
        self._failed: PrefillEntry | DecodeEntry | None = None  # its Error entry while the engine is rebuilt
        self.watchdog = (StepWatchdog(ctx.step_timeout, self._on_hang, stacks_path_for(ctx.out_path))
                         if ctx.step_timeout.enabled else None)
        self.sampling = EntrySampling(telemetry)
        self.driver = self._driver(engine)
        self._primed: int | None = None  # the context whose shared prefix is in the prefix cache
        info = engine.info
        self.prompts = ctx.text or PromptFactory(info.vocab_size, plan.seed, info.special_token_ids)

    def _driver(self, engine: Engine) -> Driver:
        ticker = self.ctx.progress.tick if self.ctx.progress.sink.live else None
        stepped = WatchedEngine(engine, self.watchdog) if self.watchdog else engine  # every step under the watchdog
        driver = Driver(stepped, should_stop=self.ctx.should_stop, ticker=ticker)
        driver.on_window_edge = self.sampling.mark if self.sampling.telemetry is not None else None
        return driver

    def save(self) -> None:
        """Write the results file (atomically); nothing once the watchdog has saved its own last word."""
        with self._save_lock:
            if self.writer is not None and not self._hung:
                self.writer.save(self.record)

    def _on_hang(self, hang: Hang) -> None:
        """On the watchdog's thread: the entry in progress becomes Error with the hang's reason, and the file is saved.

        The main thread is blocked inside the step, so it changes nothing meanwhile; the
        save lock keeps it from writing after this (it would find ``_hung`` set).
        """
        with self._save_lock:
            self._hung = True
            if self._current is not None:
                kind, entry = self._current[0], self._hung_entry(hang)
                self.record = dataclasses.replace(self.record, **{kind: getattr(self.record, kind) + (entry,)})
            self.add_note(f"step watchdog: {hang.reason()}; the run ended there")
            if self.writer is not None:
                self.writer.save(self.record, manifest=True)

    def _append(self, entry: PrefillEntry | DecodeEntry) -> None:
        kind = "prefill" if isinstance(entry, PrefillEntry) else "decode"
        self.record = dataclasses.replace(self.record, **{kind: getattr(self.record, kind) + (entry,)})
        if self.ctx.text is not None:  # the texts drawn so far, in the header
            plan = dataclasses.replace(self.record.plan, prompts=self.ctx.text.recorded())
            self.record = dataclasses.replace(self.record, plan=plan)
        self.save()

    def add_note(self, note: str) -> None:
        self.record = dataclasses.replace(self.record, notes=self.record.notes + (note,))

    def _guarded(self, fn, *args) -> PrefillEntry | DecodeEntry:
        """``fn(*args)``; on an engine failure, its Error entry after the engine is back to idle."""
        try:
            return fn(*args)
        except EntryFailed as failed:
            first = not (self.record.prefill or self.record.decode)  # nothing measured yet, no file begun
            if first and not self.spans_nodes():
                self._first_failed(failed.error)
            self._failed = failed.entry  # what a hung rebuild saves
            self._recover(failed.error)
            self._failed = None
            if first:  # every node's ranks came back: the failure was the engine's own, not a lost node
                self._first_failed(failed.error)
            return failed.entry

    def spans_nodes(self) -> bool:
        """Whether some of the engine's ranks run on other nodes (or where a cluster manager placed them).

        There a failing step may be a node lost, not a setting: only the rebuild tells, and the step
        watchdog ends a rebuild that waits for ranks that never come (exit 3, the cell kept as Error).
        """
        p = self.record.placement
        return p is not None and (p.nodes is None or p.nodes > 1)

    def _first_failed(self, error: Exception) -> None:
        """The first entry failed: the run ends as one line naming the engine's message (exit 2), no file."""
        with engine_stage("in its first measured entry", self.record.profile.overrides):
            raise error from None

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
        build = lambda: build_engine(self.ctx.launch)  # noqa: E731
        self.engine = self.watchdog.rebuild(build, self.record.engine.build_s or 0.0) if self.watchdog else build()
        self.driver = self._driver(self.engine)
        self._primed = None
        self.add_note(f"engine rebuilt after {type(error).__name__}: {error}")

    def pending(self) -> list[tuple[str, object]]:
        """What the record does not hold yet, in measuring order (resume skips the rest).

        Row by row: the context's cold prefill, then its decode cells, so that the prefill's
        last sample primes the row's shared context once for all its cells; prefill contexts
        without a decode row come last.
        """
        done_prefill = {e.context for e in self.record.prefill}
        done_cells = {e.key for e in self.record.decode}
        prefill = [c for c in self.plan.prefill_contexts if c not in done_prefill]
        order: list[tuple[str, object]] = []
        for context in dict.fromkeys(c.context for c in self.plan.cells):
            if context in prefill:
                order.append(("prefill", prefill.pop(prefill.index(context))))
            order += [("decode", c) for c in self.plan.cells if c.context == context and c.key not in done_cells]
        return order + [("prefill", c) for c in prefill]

    def run(self) -> RunRecord:
        """Measure every pending entry, in plan order; the finished record."""
        started = time.perf_counter()
        try:
            for kind, item in self.pending():
                entry = self._prefill(item) if kind == "prefill" else self._decode(item)
                self._append(entry)
        finally:
            if self.watchdog is not None:
                self.watchdog.stop()
            self.record = dataclasses.replace(self.record, measure_s=self.record.measure_s + time.perf_counter() - started)
        self.record = dataclasses.replace(self.record, finished=True)
        self.save()
        return self.record

    def _hung_entry(self, hang: Hang) -> PrefillEntry | DecodeEntry:
        """The entry in progress as Error: the hang's reason, after the failure it was recovering from if any."""
        kind, item, reproduce = self._current
        if self._failed is not None:
            v = self._failed.verdict
            return dataclasses.replace(self._failed, verdict=Verdict(v.status, f"{v.reason}; then {hang.reason()}",
                                                                     v.checks_passed))
        verdict = Verdict(st.ERROR, hang.reason(), ())
        if kind == "prefill":
            return PrefillEntry(item, verdict, (), error=hang.reason())
        return derive.unmeasured_entry(item, self.record.plan.settings.prompt_mode, reproduce, verdict, hang.reason())

    def _measuring(self, kind: str, item, reproduce: str = "") -> None:
        """The entry now in progress (what a hung step marks Error); its steps are counted from 1."""
        self._current = (kind, item, reproduce)
        if self.watchdog is not None:
            self.watchdog.new_cell()

    def _prefill(self, context: int) -> PrefillEntry:
        progress = self.ctx.progress
        self._measuring("prefill", context)
        progress.begin(f"prefill {context:>8,} tokens")
        entry = self._guarded(measure_prefill, self.driver, self.sampling, self.prompts, context, self.record.plan)
        # Its last sample left the row's shared context in the prefix cache (shared mode).
        self._primed = context if entry.error is None else None
        progress.end(prefill_line(entry))
        return entry

    def _decode(self, cell) -> DecodeEntry:
        """The cell measured, and again while it is disturbed, up to ``retry_disturbed`` more times; the last
        try's figures, the earlier tries kept as :class:`EarlierTry`."""
        entry, tries = self._decode_once(cell), []
        while entry.disturbed and entry.error is None and len(tries) < self.ctx.retry_disturbed:
            tries.append(EarlierTry(len(tries) + 1, entry.figures.total_tok_s if entry.figures else None, entry.disturbed))
            self.ctx.progress.total += 1
            self.ctx.progress.note(f"  {entry.disturbed}; measuring again (try {len(tries) + 1} of "
                                   f"{self.ctx.retry_disturbed + 1})")
            entry = self._decode_once(cell)
        return dataclasses.replace(entry, tries=tuple(tries)) if tries else entry

    def _decode_once(self, cell) -> DecodeEntry:
        rec, progress = self.record, self.ctx.progress
        forced = Acceptance.from_dict(rec.profile.acceptance)
        reproduce = reproduce_command(rec.profile.path or rec.profile.name, rec.profile.overrides, rec.plan, cell, forced)
        self._measuring("decode", cell, reproduce)
        if not cell.pre_status:
            progress.begin(f"decode  {cell.context:>8,} x {cell.concurrency:<3}")
        entry = self._guarded(measure_decode, self.driver, self.sampling, self.prompts, cell, rec.plan,
                              self.engine.info.capacity, reproduce, rec.peaks, self._primed == cell.context,
                              self.ctx.debug, forced)
        if not cell.pre_status:
            # A measured cell leaves its row primed (its requests shared the context); a failed one, unknown.
            self._primed = cell.context if entry.error is None else None
            progress.end(decode_line(entry))
        else:
            progress.note(decode_line(entry))
        return entry


def prefill_line(e: PrefillEntry) -> str:
    f = e.figures
    if f is None or f.ttft_ms is None:
        return f"prefill {e.context:>8,}: {e.status} {e.reason}"
    return (f"prefill {e.context:>8,}: {f.prompt_tok_s:,.0f} prompt tok/s, TTFT {f.ttft_ms:,.0f} ms, {f.steps} steps, "
            f"{f.samples} samples  [{e.status}]")


def decode_line(e: DecodeEntry) -> str:
    head = f"decode  {e.context:>8,} x {e.concurrency:<3}: "
    f = e.figures
    if f is None:
        return head + f"{e.status}: {e.reason}"
    extra = f"  ({e.reason})" if e.reason else ""
    return head + (f"{f.total_tok_s:,.1f} tok/s total, {f.output_tokens} tokens in {f.window_s:.1f} s, "
                   f"avg active {f.avg_active:.2f}  [{e.status}]{extra}")
