"""The report's header: what ran, on what, with which settings and capacity.

Built once as plain facts (label, value) grouped in sections, so the Markdown and HTML
renderers show the same header. Every value comes from the results file; a missing
value shows as a dash rather than failing the report.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from inproc.render.fmt import DASH
from inproc.results import RunRecord
from inproc.units import format_tokens

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
    summary: str  # engine · version · quantization · matrix shape, as the references' subtitle
    warnings: tuple[str, ...]
    sections: tuple[Section, ...]


def build_header(rec: RunRecord) -> Header:
    """All header facts of a run record."""
    warnings = tuple(w for w, on in ((DUMMY_WARNING, dummy_weights(rec)), (UNFINISHED_WARNING, not rec.finished)) if on)
    sections = (_hardware(rec), _engine(rec), _run(rec), _launch(rec), _capacity(rec))
    return Header(_title(rec), _summary(rec), warnings, tuple(s for s in sections if s.facts))


def dummy_weights(rec: RunRecord) -> bool:
    args = rec.profile.get("engine_args") or {}
    return bool(rec.engine.get("dummy_weights")) or str(args.get("load-format", args.get("load_format"))) == "dummy"


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
    model = str(rec.engine.get("model") or rec.profile.get("model") or DASH).rstrip("/").rsplit("/", 1)[-1]
    hardware = rec.profile.get("hardware") or _gpu_summary(rec.machine.get("gpu") or {}) or _cpu_model(rec)
    return f"{model} on {hardware}"


def _summary(rec: RunRecord) -> str:
    settings = rec.engine.get("settings") or {}
    contexts, concs = list(rec.plan.get("contexts") or []), list(rec.plan.get("concurrency") or [])
    weights = settings.get("quantization") or settings.get("dtype")  # unquantized: the dtype says what ran
    parts = [str(rec.engine.get("name", DASH)), str(rec.engine.get("version", DASH)), text(weights)]
    if contexts and concs:
        parts.append(f"{len(contexts)} contexts ({format_tokens(min(contexts))}–{format_tokens(max(contexts))}) × "
                     f"{len(concs)} concurrency levels ({min(concs)}–{max(concs)})")
    prefill = rec.plan.get("prefill_list") or [e.context for e in rec.prefill]
    if prefill:
        parts.append("prefill at " + ", ".join(format_tokens(c) for c in prefill))
    return " · ".join(parts)


def _cpu_model(rec: RunRecord) -> str:
    return str((rec.machine.get("cpu") or {}).get("model") or "an unrecorded machine")


def _gpu_summary(gpu: dict) -> str:
    names = Counter(str(d.get("name", "GPU")) for d in gpu.get("devices") or [])
    return ", ".join(f"{n} × {name}" for name, n in names.items())


def _hardware(rec: RunRecord) -> Section:
    gpu, cpu, system = (rec.machine.get(k) or {} for k in ("gpu", "cpu", "system"))
    facts = [Fact("Profile hardware", str(rec.profile["hardware"]))] if rec.profile.get("hardware") else []
    if gpu.get("devices"):
        mem = {d.get("memory_total_mib") for d in gpu["devices"]}
        each = f" ({next(iter(mem)) / 1024:,.0f} GiB each)" if len(mem) == 1 and None not in mem else ""
        facts.append(Fact("GPUs", _gpu_summary(gpu) + each))
        limits = sorted({d.get("power_limit_w") for d in gpu["devices"] if d.get("power_limit_w")})
        if limits:
            facts.append(Fact("GPU power limit", ", ".join(f"{w:,.0f} W" for w in limits)))
        facts.append(Fact("GPU driver", f"{gpu.get('driver_version', DASH)}, CUDA {gpu.get('cuda_driver_version', DASH)}"))
    else:
        facts.append(Fact("GPUs", f"none sampled ({gpu.get('absent') or gpu.get('error') or 'not recorded'})"))
    if cpu:
        cores = f"{cpu.get('logical_cores', DASH)} logical cores ({cpu.get('affinity_cores', DASH)} usable by the run)"
        facts.append(Fact("CPU", f"{cpu.get('model', DASH)} · {cores} · {cpu.get('numa_nodes', DASH)} NUMA node(s)"))
        if cpu.get("memory_total_bytes"):
            facts.append(Fact("RAM", f"{cpu['memory_total_bytes'] / 2**30:,.1f} GiB"))
    if system:
        facts.append(Fact("OS", f"{system.get('platform', DASH)} · Python {system.get('python', DASH)}"))
    return Section("Hardware", tuple(facts))


def _engine(rec: RunRecord) -> Section:
    settings = dict(rec.engine.get("settings") or {})
    facts = [Fact("Engine", str(rec.engine.get("name", DASH))), Fact("Version", str(rec.engine.get("version", DASH))),
             Fact("Quantization", text(settings.pop("quantization", None)))]
    facts += [Fact(k, text(v)) for k, v in settings.items()]
    software = {k: v for k, v in ((rec.machine.get("software") or {}).items()) if v and k != rec.engine.get("name")}
    if software:
        facts.append(Fact("Software", ", ".join(f"{k} {v}" for k, v in software.items())))
    return Section("Engine", tuple(facts))


def _run(rec: RunRecord) -> Section:
    plan, prof = rec.plan, rec.profile
    mode = str(plan.get("prompt_mode"))
    prompts = {"shared": f"shared: one context per cell, primed once into the prefix cache, plus a "
                         f"{plan.get('suffix_tokens', DASH)}-token unique suffix per request",
               "distinct": "distinct: every request has its own context"}.get(mode, text(mode))
    facts = [
        Fact("Model", str(rec.engine.get("model") or prof.get("model") or DASH)),
        Fact("Profile", f"{prof.get('name', DASH)} ({prof.get('path', DASH)})"),
        Fact("Decode test", f"fixed duration: {plan.get('window_s', DASH)} s window per cell"),
        Fact("Max output", f"{plan['max_output']:,} tokens" if plan.get("max_output") else DASH),
        Fact("Prompts", prompts),
        Fact("Prefill mode", f"cold (prefix cache reset, one output token), "
                             f"{plan.get('prefill_samples', DASH)} samples per context within "
                             f"{plan.get('prefill_budget_s', DASH)} s"),
        Fact("Temperature", text(plan.get("temperature"))),
        Fact("Seed", text(plan.get("seed"))),
        Fact("Started", rec.created or DASH),
        Fact("Finished", "yes" if rec.finished else "no"),
    ]
    facts += [Fact("Run note", note) for note in rec.notes]
    if prof.get("notes"):
        facts.append(Fact("Profile notes", str(prof["notes"])))
    if rec.command:
        facts.append(Fact("Command", rec.command, code=True))
    return Section("Run", tuple(facts))


def _launch(rec: RunRecord) -> Section:
    prof = rec.profile
    args = prof.get("engine_args") or {}
    facts = [Fact("Engine arguments (profile, overrides applied)",
                  "\n".join(f"{k} = {json.dumps(v) if not isinstance(v, str) else v}" for k, v in args.items()) or "none",
                  code=True)]
    overrides = prof.get("overrides") or []
    facts.append(Fact("Overrides", " ".join(f"--set {o}" for o in overrides), code=True) if overrides
                 else Fact("Overrides", "none"))
    env = prof.get("env") or {}
    if env:
        facts.append(Fact("Environment", "\n".join(f"{k}={v}" for k, v in env.items()), code=True))
    return Section("Launch settings", tuple(facts))


def _capacity(rec: RunRecord) -> Section:
    cap = rec.capacity
    if not cap:
        return Section("Capacity", ())

    def n(key: str) -> str:
        return f"{cap[key]:,}" if isinstance(cap.get(key), int) else text(cap.get(key))

    kv = f"{n('num_blocks')} blocks × {n('block_size')} tokens = {n('kv_tokens')} tokens"
    usable = cap.get("usable_blocks")
    if usable is not None and usable != cap.get("num_blocks"):
        kv += f" ({usable:,} blocks requests can hold; the rest is reserved by the engine)"
    facts = [Fact("KV cache", kv)]
    for g in cap.get("groups") or []:
        window = f", sliding window {g['sliding_window']:,}" if g.get("sliding_window") else ""
        facts.append(Fact("KV-cache group", f"{g.get('kind', DASH)}: block {g.get('block_size', DASH)}, "
                                            f"{g.get('num_layers', DASH)} layers{window}"))
    facts += [Fact(k, n(k)) for k in ("max_num_seqs", "max_num_batched_tokens", "max_model_len")]
    if cap.get("engine_max_concurrency") is not None:
        facts.append(Fact("Engine max concurrency",
                          f"{cap['engine_max_concurrency']:,.2f} requests of max_model_len tokens (the engine's own figure)"))
    facts += [Fact(k, text(v)) for k, v in (cap.get("extra") or {}).items()]
    return Section("Capacity", tuple(facts))
