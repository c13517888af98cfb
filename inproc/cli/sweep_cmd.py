"""``inproc sweep PROFILE --vary KEY=V1,V2 ... --cells ... --out DIR``: a fresh engine per variant."""
from __future__ import annotations

import dataclasses
import json
import os
import secrets
import sys
import time
from pathlib import Path

import click

import inproc
from inproc import engines
from inproc.cli.options import command_line, measure_options, open_prompts, prompt_options, retry_option, settings_with
from inproc.errors import UsageError
from inproc.plan.matrix import check_contexts
from inproc.plan.acceptance import parse_length
from inproc.profiles.spec import Profile, load_with_overrides
from inproc.record.io import write_text_atomic
from inproc.render.sweep import data, formats
from inproc.render.sweep.view import sweep_view
from inproc.sweep.manifest import DONE, SWEEP_FILE, Sweep, SweepPlan, VariantRun, load_sweep, sweep_path
from inproc.sweep.acceptance import no_speculation, parse_acceptance, parse_at, speculation_variants
from inproc.sweep.graph_lists import graph_variants, parse_graph_sizes
from inproc.sweep.plan import Variant, parse_varies, plan_variants
from inproc.sweep.run import run_sweep
from inproc.sweep.summary import summarize
from inproc.telemetry.sampler import DEFAULT_HZ
from inproc.units import parse_cell_list, parse_int_list, parse_token_list

SUMMARY_FILE = "sweep.md"


@click.command(context_settings={"max_content_width": 110}, short_help="Measure the same cells once per variant of engine settings.")
@click.argument("profile_path", metavar="PROFILE")
@click.option("--vary", "varies", multiple=True, metavar="KEY=V1,V2,...",
              help="Values of one setting (repeatable): an engine argument (max-num-seqs), a key inside a table "
                   "argument (compilation-config.cudagraph_capture_sizes) or env.NAME. A value with commas goes in "
                   "brackets ([1,2,4]), or the flag is given once per value.")
@click.option("--zip", "zipped", is_flag=True, help="Pair the i-th values of every --vary instead of every combination.")
@click.option("--graph-sizes", metavar="LISTS",
              help="Lists of CUDA-graph capture sizes, one engine each: a sizes file from 'inproc graphs --sweep-file' "
                   "(FILE, or FILE:captured,suggested), or captured (the profile's own) and bracketed lists [1,2,4,8].")
@click.option("--acceptance", "acceptance", metavar="L1,L2,...",
              help="Where speculation pays: one variant per forced mean acceptance length (inproc run --acceptance), "
                   "crossed with any --vary, and one with the profile's speculation removed (implies --break-even).")
@click.option("--break-even", "break_even", is_flag=True,
              help="Add a variant with the profile's speculation removed and find, per cell, the measured acceptance "
                   "length where speculative tok/s meets it (the --vary variants should change acceptance: the draft "
                   "count, the n-gram windows).")
@click.option("--at", "at", type=float, metavar="L", help="With --acceptance/--break-even: the speedup at this acceptance length.")
@click.option("--cells", help="Decode cells, CONTEXTxCONCURRENCY: 8Kx1,8Kx16 (or --contexts and --concurrency).")
@click.option("--contexts", help="Decode contexts of a grid, e.g. 8K,32K.")
@click.option("--concurrency", help="Concurrency levels of a grid, e.g. 1,16,64.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Sweep folder: one results file per variant, sweep.json and sweep.md.")
@click.option("--resume", is_flag=True, help="Continue the sweep in --out: run only the variants not done or failed.")
@click.option("--force", is_flag=True, help="Start over in an existing sweep folder.")
@measure_options
@prompt_options
@retry_option
def sweep(profile_path, varies, zipped, graph_sizes, acceptance, break_even, at, cells, contexts, concurrency, out_dir, resume, force, sets, seed, loop_check,
          telemetry_hz, retry_disturbed, prompts_file, tokenizer, **flags):
    """Measure the same decode cells once per variant of engine settings, each in a fresh engine.

    Every variant runs as its own child process ('inproc run', no prefill) and writes an
    ordinary results file into --out; sweep.json lists the variants and how each ended,
    sweep.md compares them cell by cell. A variant that fails is recorded with its error and
    the sweep goes on; Ctrl-C stops it with sweep.json valid, --resume continues it.

    \b
    CUDA-graph capture sizes on vLLM:
      inproc sweep my-vllm.toml --cells 8Kx1,8Kx16,8Kx64 --duration 30 --out sweeps/graphs \\
        --vary 'compilation-config.cudagraph_capture_sizes=[1,2,4,8,16],[1,2,4,8,16,32,64]' \\
        --vary compilation-config.max_cudagraph_capture_size=16,64 --zip
    On SGLang (0.5.23 names; cuda-graph-bs / cuda-graph-max-bs are gone):
      inproc sweep my-sglang.toml --cells 8Kx16,8Kx64 --out sweeps/sgl \\
        --vary cuda-graph-max-bs-decode=16,64,128
      inproc sweep my-sglang.toml --cells 8Kx16 --out sweeps/sgl-bs \\
        --vary 'cuda-graph-bs-decode=[1,2,4,8,16],[1,8,16]'
    """
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")  # the name check reads the engine's parser; quiet it
    if resume and force:
        raise UsageError("--resume continues the sweep in --out and --force starts it over; give one of them.")
    profile = load_with_overrides(profile_path, sets)
    forced, pays, at = _pays_flags(acceptance, break_even, at)
    parsed, lists, variants = _variants(profile, varies, zipped, graph_sizes, forced, pays)
    for v in variants:
        profile.with_overrides(v.sets)  # every override applies (a key into a table that is no table...)
    grid = dict(contexts=parse_token_list(contexts) if contexts else None, cells=parse_cell_list(cells) if cells else None,
                concurrency=parse_int_list(concurrency) if concurrency else None)
    settings = settings_with(profile.matrix, **grid, **flags)
    _check_contexts(profile, variants, settings.contexts)
    passed = _passed(flags, retry_disturbed, open_prompts(profile, prompts_file, tokenizer))
    plan = SweepPlan(profile.path, profile.name, profile.engine, parsed, zipped,
                     tuple(_run_args(cells, contexts, concurrency, sets, loop_check, telemetry_hz, passed)),
                     seed if seed is not None else secrets.randbits(31),
                     {"model": profile.model, "engine_args": profile.engine_args, "env": profile.env},
                     tuple((g.name, g.sizes) for g in lists), forced, pays, at)
    directory = Path(out_dir)
    old = _resumed(directory, plan, seed) if resume else None
    if old is None:
        _check_folder(directory, force)
    _check_names(profile, parsed)  # last: it reads the engine's own parser, seconds to import
    start = old if old is not None else _fresh(directory, plan, variants)
    done = run_sweep(start, directory, echo=lambda line: click.echo(line, err=True),
                     on_change=lambda s: _write_summary(s, directory))
    click.echo(formats.markdown(sweep_view(summarize(done, directory)), with_definitions=False))
    click.echo(f"sweep:   {sweep_path(directory)}\nsummary: {directory / SUMMARY_FILE}")
    if not any(r.status == DONE for r in done.runs):
        raise click.ClickException("no variant was measured; sweep.json and sweep.md list why.")


def _variants(profile: Profile, varies, zipped: bool, graph_sizes: str | None, forced: tuple[str, ...], pays: bool):
    """(the --vary keys, the --graph-sizes lists, every variant): the lists crossed with the --vary variants, or
    with --acceptance/--break-even the variant without speculation and the speculative ones."""
    parsed = parse_varies(varies) if varies or not (graph_sizes or pays) else ()
    variants = plan_variants(parsed, zipped) if parsed else ()
    if pays:
        return parsed, (), _speculation(profile, graph_sizes, forced, variants)
    lists = parse_graph_sizes(graph_sizes) if graph_sizes else ()
    return parsed, lists, graph_variants(lists, _graph_sets(profile), variants) if lists else variants


def _speculation(profile: Profile, graph_sizes, forced, varied: tuple[Variant, ...]) -> tuple[Variant, ...]:
    """The variants of a where-speculation-pays sweep (inproc.sweep.acceptance); each forced length checked
    against every speculative variant's profile as its child will (a length above k + 1: one line here)."""
    if graph_sizes:
        raise UsageError("--graph-sizes and --acceptance/--break-even measure different things; run them as two sweeps.")
    if not forced and not varied:
        raise UsageError("--break-even needs speculative variants whose acceptance differs: give --vary (e.g. "
                         "--vary speculative-config.num_speculative_tokens=1,2,3) or --acceptance L1,L2,...")
    adapter = engines.get(profile.engine)
    base = no_speculation(adapter.speculation_keys(profile.engine_args), adapter.label, profile.path or profile.name)
    for value in forced:
        for v in varied or (Variant(0, ()),):
            profile.with_overrides(v.sets).with_acceptance(parse_length(value))
    return speculation_variants(base, forced, varied)


def _pays_flags(acceptance: str | None, break_even: bool, at: float | None) -> tuple[tuple[str, ...], bool, float | None]:
    """(the forced lengths, whether the sweep finds where speculation pays, --at) from the flags."""
    forced = parse_acceptance(acceptance) if acceptance is not None else ()
    pays = bool(forced) or break_even
    if at is not None and not pays:
        raise UsageError(f"--at {at:g} reads the speedup of a --acceptance or --break-even sweep; give one of them.")
    return forced, pays, parse_at(at)


def _graph_sets(profile: Profile):
    """The profile's engine's overrides for a list of sizes; one line where its graphs are not sized in tokens."""
    adapter = engines.get(profile.engine)
    if not adapter.graph_size_args:
        raise UsageError(f"--graph-sizes: {adapter.label}'s CUDA graphs are not captured per token count; "
                         "sweep its graph settings with --vary.")
    return adapter.graph_size_sets


def _write_summary(s: Sweep, directory: Path) -> None:
    summary = summarize(s, directory)
    write_text_atomic(directory / SUMMARY_FILE, formats.markdown(sweep_view(summary)))
    if summary.pays:  # where speculation pays, as data: the same rows as the report's section
        write_text_atomic(directory / data.BREAK_EVEN_JSON, json.dumps(data.break_even_json(summary.pays), indent=1) + "\n")
        write_text_atomic(directory / data.BREAK_EVEN_CSV, data.break_even_csv(summary.pays))


def _check_names(profile: Profile, varies) -> None:
    """Every --vary key names one of the engine's own arguments (read from its parser; nothing is built)."""
    adapter = engines.get(profile.engine)
    if not adapter.installed():
        raise UsageError(f"The profile's engine, {profile.engine}, cannot be imported by this Python ({sys.executable}). "
                         f"Run the sweep with the engine's environment, e.g. .venv-{profile.engine}/bin/python -m inproc sweep …")
    try:
        adapter.check_argument_names([v.argument for v in varies if v.argument])
    except UsageError as e:
        raise UsageError(f"Bad --vary: {e}") from None


def _check_contexts(profile: Profile, variants: tuple[Variant, ...], contexts: tuple[int, ...]) -> None:
    """A context above every variant's declared maximum length is a mistake in the flags, not a variant's failure."""
    adapter, errors = engines.get(profile.engine), []
    for v in variants:
        p = profile.with_overrides(v.sets)
        limit = adapter.declared_max_len(p.model, dict(p.engine_args))
        try:
            if limit:
                check_contexts(contexts, limit, "profile's max length")
        except UsageError as e:
            errors.append(e)
    if errors and len(errors) == len(variants):
        raise errors[0]


def _passed(flags: dict, retry_disturbed: int, text) -> dict:
    """The flags handed to every variant's run: the matrix flags, --retry-disturbed, and --prompts with the
    tokenizer it was checked with (absolute paths, so a child reads the same files)."""
    return {**flags, "retry_disturbed": retry_disturbed or None, "prompts_file": text and text.source.file,
            "tokenizer": text and text.source.tokenizer}


def _run_args(cells, contexts, concurrency, sets, loop_check, telemetry_hz, flags) -> list[str]:
    """The ``inproc run`` flags every variant shares: as given here, the rest left to the profile."""
    args = ["--no-prefill"]
    for name, value in (("--cells", cells), ("--contexts", contexts), ("--concurrency", concurrency)):
        args += [name, value] if value else []
    names = {"window_s": "--duration", "window_steps": "--window-steps", "max_output": "--max-output",
             "prompt_mode": "--prompt-mode", "temperature": "--temperature",
             "kernel_steps": "--kernel-steps", "retry_disturbed": "--retry-disturbed", "prompts_file": "--prompts",
             "tokenizer": "--tokenizer"}
    for key, value in flags.items():
        if key in ("anatomy", "kernels"):
            args += [f"--{key}", "on" if value else "off"] if value is not None else []
            continue
        args += [names[key], f"{value:g}" if isinstance(value, float) else str(value)] if value is not None else []
    args += [] if loop_check else ["--no-loop-check"]
    args += [] if telemetry_hz == DEFAULT_HZ else ["--telemetry-hz", f"{telemetry_hz:g}"]
    for item in sets:
        args += ["--set", item]
    return args


def _check_folder(directory: Path, force: bool) -> None:
    """A new sweep goes into a new or empty folder, or replaces one with --force."""
    if directory.is_file():
        raise UsageError(f"--out {str(directory)!r} is a file. Give a folder for the sweep.")
    if sweep_path(directory).exists() and not force:
        raise UsageError(f"{directory} holds a sweep already ({SWEEP_FILE}). Pass --resume to continue it, "
                         "or --force to start over.")
    if directory.is_dir() and any(directory.iterdir()) and not force:
        raise UsageError(f"--out {str(directory)!r} exists and is not empty. Give a new folder, or --force to use it.")


def _fresh(directory: Path, plan: SweepPlan, variants: tuple[Variant, ...]) -> Sweep:
    directory.mkdir(parents=True, exist_ok=True)
    return Sweep(plan, tuple(VariantRun(v) for v in variants), command_line(), time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                 {"name": "inproc", "version": inproc.__version__})


def _resumed(directory: Path, plan: SweepPlan, seed: int | None) -> Sweep:
    old = load_sweep(directory)
    mine = plan if seed is not None else dataclasses.replace(plan, seed=old.plan.seed)
    diff = old.plan.differences(mine)
    if diff:
        raise UsageError(f"Cannot resume the sweep in {directory}: it was planned with different "
                         f"{', '.join(diff)}. Repeat its command with --resume: {old.command}")
    return old
