"""``inproc run PROFILE``: the prefill row and the whole decode grid, one engine."""
from __future__ import annotations

import time
from pathlib import Path

import click

from inproc.cli.matrix_run import measure
from inproc.cli.options import (
    acceptance_options, debug_options, debug_settings, exit_code, matrix_options, open_prompts, prompt_options,
    retry_option, settings_with,
)
from inproc.render.markdown import render_markdown
from inproc.render.text import render_matrix
from inproc.record.io import write_text_atomic
from inproc.plan.acceptance import from_flags
from inproc.profiles.spec import load_with_overrides
from inproc.errors import UsageError
from inproc.plan.shard import parse_shard
from inproc.units import parse_cell_list, parse_int_list, parse_token_list


@click.command(short_help="Measure the prefill row and the whole decode grid.")
@click.argument("profile_path", metavar="PROFILE")
@click.option("--contexts", help="Decode contexts, e.g. 8K,16K,32K (K = 1024 tokens).")
@click.option("--concurrency", help="Concurrency levels, e.g. 1,2,4,8.")
@click.option("--cells", help="Decode cells instead of the grid, CONTEXTxCONCURRENCY: 8Kx1,8Kx16,32Kx64.")
@click.option("--prefill-contexts", help="Cold-prefill contexts (default: the decode contexts).")
@click.option("--no-prefill", is_flag=True, help="Measure no cold prefill, only the decode cells.")
@click.option("--prefill-samples", type=int, help="Cold-prefill samples per context (a time budget may cut it).")
@click.option("--resume", type=click.Path(dir_okay=False), help="Continue this results file: skip finished cells.")
@click.option("--shard", metavar="I/N", help="Measure shard I of N of the plan (needs --seed; merge the N files with 'inproc merge').")
@click.option("--selftest", "selftest_file", type=click.Path(dir_okay=False),
              help="Attach this `inproc selftest --out` record: its verdict and engine build go into the results' notes.")
@matrix_options
@prompt_options
@acceptance_options
@retry_option
@debug_options(with_breakpoint=False)
def run(profile_path, contexts, concurrency, cells, prefill_contexts, no_prefill, prefill_samples, resume, shard,
        selftest_file, sets, out, force, seed, loop_check, telemetry_hz, profiler, profile_steps, profile_skip, profile_dir,
        profile_with_stack, nvtx, step_timeout, retry_disturbed, prompts_file, tokenizer, acceptance, acceptance_rates,
        **flags):
    """Measure cold prefill per context, then sustained decode for every context x concurrency cell.

    \b
    Exit codes: 0 at least one cell measured; 2 bad input; 3 a step hung (--step-timeout);
    4 no cell measured (every entry Error, Over capacity or Exceeds max model length).
    """
    from inproc.selftest.report import attach, load

    checked = load(selftest_file) if selftest_file else None  # a bad file is one line, before any build
    profile = load_with_overrides(profile_path, sets, from_flags(acceptance, acceptance_rates))
    text = open_prompts(profile, prompts_file, tokenizer)
    settings = settings_with(
        profile.matrix,
        # Given but empty (--contexts "") is an error of parse_*_list, never "the profile's default".
        contexts=parse_token_list(contexts) if contexts is not None else None,
        concurrency=parse_int_list(concurrency) if concurrency is not None else None,
        cells=parse_cell_list(cells) if cells is not None else None,
        prefill_contexts=prefill_list(prefill_contexts, no_prefill),
        prefill_samples=prefill_samples,
        **flags,
    )
    part = parse_shard(shard) if shard is not None else None
    if not out and not resume:
        suffix = f"-shard{part.index}of{part.count}" if part else ""
        out = str(Path("results") / f"{profile.name}-{time.strftime('%Y%m%d-%H%M%S')}{suffix}.json")
    debug = debug_settings(resume or out, profiler, profile_steps, profile_skip, profile_dir, profile_with_stack, nvtx)
    record = measure(profile, settings, loop_check=loop_check, telemetry_hz=telemetry_hz, out=out, seed=seed,
                     resume=resume, force=force, debug=debug, shard=part, step_timeout=step_timeout,
                     retry_disturbed=retry_disturbed, text=text)
    results = Path(resume or out)
    record = attach(record, checked, str(results)) if checked is not None else record
    click.echo(render_matrix(record))
    write_text_atomic(results.with_suffix(".md"), render_markdown(record))
    click.echo(f"\nresults: {results}\nreport:  {results.with_suffix('.md')}")
    return exit_code(record)


def prefill_list(prefill_contexts: str | None, no_prefill: bool) -> tuple[int, ...] | None:
    """The --prefill-contexts list, () for --no-prefill, None (the profile's) when neither is given."""
    if no_prefill and prefill_contexts is not None:
        raise UsageError(f"--no-prefill measures no prefill; drop it or --prefill-contexts {prefill_contexts}.")
    if no_prefill:
        return ()
    return parse_token_list(prefill_contexts, "prefill context") if prefill_contexts is not None else None
