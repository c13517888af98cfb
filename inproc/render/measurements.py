"""The rows of "All measurements": one per entry, prefill rows first, with every column.

The first twelve columns are the published matrices' (docs/reference-matrices.md), under their
names; ours follow. Figures of
an entry whose status is not a headline status (Looped, Error, Over capacity, ...) are
not shown: a Looped cell's speed is an artefact of repetition (its raw data stays in
the results file). Every renderer (Markdown, HTML, CSV) reads these rows and columns.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from inproc import types as st
from inproc.record.schema import DecodeEntry, PrefillEntry, RunRecord
from inproc.render import fmt
from inproc.measure.anatomy import AnatomyFigures
from inproc.measure.slow import SlowFigures
from inproc.telemetry.figures import TelemetryFigures
from inproc.units import format_tokens

PREFILL, DECODE = "Prefill", "Sustained decode"


@dataclass(frozen=True)
class Measurement:
    """One row: an entry's identity, status and the figures it shows (None: not shown)."""

    phase: str
    context: int
    concurrency: int
    status: str
    reason: str
    total_tok_s: float | None = None  # prompt tok/s for a prefill row
    per_request_tok_s: float | None = None
    ttft_ms: float | None = None
    tbt_ms: float | None = None
    avg_active: float | None = None
    completed: int | None = None  # prefill: samples taken (as the published vLLM matrix shows)
    output_tokens: int | None = None
    window_s: float | None = None
    max_waiting: int | None = None
    harness_overhead: float | None = None
    preemptions: int | None = None
    spec_acceptance_rate: float | None = None
    spec_mean_acceptance_length: float | None = None
    prefill_steps: int | None = None
    telemetry: TelemetryFigures | None = None
    anatomy: AnatomyFigures | None = None
    slow: SlowFigures | None = None
    throttled: str = ""  # the throttle check's reason when it failed
    disturbed: str = ""  # the disturbance rule's cause when the machine was busy (inproc.telemetry.disturbed)
    tries: tuple = ()  # the disturbed tries before the one shown (record.schema.EarlierTry)
    reproduce: str = ""
    profiled: str = ""  # the profiler, the steps after the window it covered, and its files


def from_prefill(e: PrefillEntry) -> Measurement:
    f = e.figures if e.status in st.HEADLINE else None
    base = Measurement(PREFILL, e.context, 1, e.status, e.reason, completed=f.samples if f else None)
    if f is None:
        return base
    return replace(base, total_tok_s=f.prompt_tok_s, ttft_ms=f.ttft_ms, prefill_steps=f.steps,
                   telemetry=e.telemetry.figures if e.telemetry else None, throttled=e.throttled,
                   disturbed=e.disturbed)


def from_decode(e: DecodeEntry) -> Measurement:
    f = e.figures if e.status in st.HEADLINE else None
    prof = e.trace.profiled if e.trace is not None else None
    profiled = (f"{prof.kind}: steps {prof.first_step}–{prof.last_step}, " + ", ".join(prof.files)) if prof else ""
    base = Measurement(DECODE, e.context, e.concurrency, e.status, e.reason, reproduce=e.reproduce, profiled=profiled)
    if f is None:
        return base
    return replace(
        base, total_tok_s=f.total_tok_s, per_request_tok_s=f.per_request_tok_s, ttft_ms=f.ttft_ms, tbt_ms=f.tbt_ms,
        avg_active=f.avg_active, completed=f.completed, output_tokens=f.output_tokens, window_s=f.window_s,
        max_waiting=f.max_waiting, harness_overhead=f.harness_overhead, preemptions=f.preemptions,
        spec_acceptance_rate=f.spec_acceptance_rate, spec_mean_acceptance_length=f.spec_mean_acceptance_length,
        telemetry=e.telemetry.figures if e.telemetry else None, anatomy=f.anatomy, throttled=e.throttled, slow=f.slow,
        disturbed=e.disturbed, tries=e.tries,
    )


def measurements(rec: RunRecord) -> list[Measurement]:
    """Prefill rows, then decode rows, in the order they were measured."""
    return [from_prefill(e) for e in rec.prefill] + [from_decode(e) for e in rec.decode]


def _tel(name: str) -> Callable[[Measurement], float | None]:
    return lambda m: getattr(m.telemetry, name) if m.telemetry is not None else None


Shown = Literal["always", "present", "gpu", "cpu", "csv"]


@dataclass(frozen=True)
class Column:
    """A column: header, the raw value (CSV), its display text, and when it is shown.

    ``shown``: always; present (some row has a value); gpu / cpu (some row has a value
    and the run has / has no GPU telemetry); csv (only in the CSV).
    """

    name: str
    value: Callable[[Measurement], Any]
    text: Callable[[Any], str]
    shown: Shown = "always"
    csv_name: str = ""  # the CSV header where the unit must be named


def _attr(name: str) -> Callable[[Measurement], Any]:
    return lambda m: getattr(m, name)


def _anat(name: str) -> Callable[[Measurement], Any]:
    return lambda m: getattr(m.anatomy, name) if m.anatomy is not None else None


def _slow(name: str) -> Callable[[Measurement], Any]:
    return lambda m: getattr(m.slow, name) if m.slow is not None else None


def graph_text(shares) -> str:
    """``FULL 92% · NONE 8%``, largest share first."""
    if not shares:
        return fmt.DASH
    return " · ".join(f"{mode} {share:.0%}" for mode, share in sorted(shares.items(), key=lambda kv: -kv[1]))


def _graph(m: Measurement):
    return (m.anatomy.graph_step_share or None) if m.anatomy is not None else None


COLUMNS: tuple[Column, ...] = (
    # -- the published matrices' columns, their names and formats
    Column("Phase", _attr("phase"), str),
    Column("Context", _attr("context"), format_tokens),
    Column("Requests at once", _attr("concurrency"), fmt.num),
    Column("Status", _attr("status"), str),
    Column("Total tok/s", _attr("total_tok_s"), fmt.tok_s),
    Column("Per request tok/s", _attr("per_request_tok_s"), fmt.tok_s),
    Column("TTFT", _attr("ttft_ms"), fmt.ms),
    Column("Time between tokens", _attr("tbt_ms"), lambda v: fmt.ms(v, 1)),
    Column("Average active requests", _attr("avg_active"), fmt.fixed),
    Column("Completed requests", _attr("completed"), fmt.num),
    Column("Output tokens", _attr("output_tokens"), fmt.num),
    Column("Measured for", _attr("window_s"), fmt.secs),
    # -- ours
    Column("Max waiting", _attr("max_waiting"), fmt.num),
    Column("Harness overhead", _attr("harness_overhead"), fmt.pct, csv_name="Harness overhead (fraction)"),
    Column("Preemptions", _attr("preemptions"), fmt.num, "present"),
    Column("Spec acceptance", _attr("spec_acceptance_rate"), fmt.pct, "present", "Spec acceptance (fraction)"),
    Column("Spec mean acceptance length", _attr("spec_mean_acceptance_length"), fmt.fixed, "present"),
    Column("Prefill steps", _attr("prefill_steps"), fmt.num, "present"),
    Column("Slow steps", _slow("count"), fmt.num, "present"),
    Column("Slow-step time", _slow("time_share"), fmt.pct, "present", "Slow-step time (fraction of window)"),
    Column("CUDA graphs", _graph, graph_text, "present", "CUDA graphs (share of window steps)"),
    Column("Padding", _anat("padding_waste"), fmt.pct, "present", "Padding waste (fraction)"),
    Column("Bandwidth", _anat("bandwidth_bytes_s"), fmt.gb_s, "present", "Bandwidth (bytes/s per GPU)"),
    Column("% of peak BW", _anat("bandwidth_peak_fraction"), fmt.pct, "present", "Bandwidth (fraction of peak)"),
    Column("FLOP/s", _anat("flops_per_s"), fmt.flops, "csv", "FLOP/s per GPU"),
    Column("% of peak FLOP/s", _anat("flops_peak_fraction"), fmt.pct, "present", "FLOP/s (fraction of peak)"),
    Column("Host %", _anat("host_overhead"), fmt.pct, "present", "Host overhead (fraction of step time)"),
    Column("Adapter %", _anat("adapter_overhead"), fmt.pct, "present", "Adapter time (fraction of step time)"),
    Column("Energy", _tel("energy_j"), fmt.joules, "gpu", "Energy (J)"),
    Column("J/token", _tel("joules_per_token"), fmt.joules, "gpu", "J/token"),
    Column("Tokens/J", _tel("tokens_per_joule"), fmt.num, "csv"),
    Column("Mean power", _tel("mean_power_w"), lambda v: fmt.unit(v, "W"), "gpu", "Mean power (W)"),
    Column("Max GPU power", _tel("max_gpu_power_w"), lambda v: fmt.unit(v, "W"), "csv", "Max GPU power (W)"),
    Column("Mean SM clock", _tel("mean_sm_clock_mhz"), lambda v: fmt.unit(v, "MHz"), "gpu", "Mean SM clock (MHz)"),
    Column("Max temp", _tel("max_temp_c"), lambda v: fmt.unit(v, "°C"), "gpu", "Max temp (C)"),
    Column("Host CPU", _tel("host_cpu_util_pct"), fmt.percent, "cpu", "Host CPU (%)"),
    Column("Process CPU", _tel("process_cpu_util_pct"), fmt.percent, "cpu", "Process CPU (% of one core)"),
    Column("Max RSS", _tel("max_rss_bytes"), fmt.mib, "cpu", "Max RSS (bytes)"),
    # What telemetry cost: in the engine's process over the window, and the GPU sampler's own process
    Column("Telemetry CPU", _tel("inproc_cpu_pct"), lambda v: fmt.percent(v, 2), "present",
           "Telemetry CPU in the engine's process (% of one core over the window)"),
    Column("Telemetry GPU marks CPU", _tel("inproc_gpu_cpu_s"), fmt.secs, "csv",
           "Telemetry GPU marks CPU in the engine's process (s, window)"),
    Column("Telemetry host sampling CPU", _tel("inproc_host_cpu_s"), fmt.secs, "csv",
           "Telemetry host sampling CPU in the engine's process (s, window)"),
    Column("Sampler CPU", lambda m: m.telemetry.sampler_cpu_pct if m.telemetry is not None and m.telemetry.gpus
           else None, fmt.percent, "gpu", "GPU sampler process CPU (% of one core over the cell)"),
    Column("Sampler CPU s", _tel("sampler_cpu_s"), fmt.secs, "csv", "GPU sampler process CPU (s, cell)"),
    Column("Telemetry notes", lambda m: "; ".join(m.telemetry.notes) if m.telemetry is not None and m.telemetry.notes
           else None, str, "present"),
    Column("Throttled", _attr("throttled"), str, "csv"),
    Column("Disturbed", _attr("disturbed"), str, "csv"),
    Column("Reason", _attr("reason"), str),
    Column("Reproduce", _attr("reproduce"), str, "csv"),
    Column("Profiled", lambda m: m.profiled or None, str, "present"),
)


def has_gpu_telemetry(rows: list[Measurement]) -> bool:
    return any(m.telemetry is not None and m.telemetry.gpus for m in rows)


def shown_columns(rows: list[Measurement]) -> list[Column]:
    """The columns a Markdown or HTML table shows for these rows."""
    gpu = has_gpu_telemetry(rows)

    def present(c: Column) -> bool:
        return any(c.value(m) is not None for m in rows)

    rules = {"always": lambda c: True, "present": present, "gpu": lambda c: gpu and present(c),
             "cpu": lambda c: not gpu and present(c), "csv": lambda c: False}
    return [c for c in COLUMNS if rules[c.shown](c)]
