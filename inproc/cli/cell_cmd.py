"""``inproc cell PROFILE --context L --concurrency C``: one decode cell, all in this process.

Made for reproducing a cell under a debugger or profiler: no subprocess anywhere.
"""
from __future__ import annotations

from dataclasses import replace

import click

from inproc.cli.matrix_run import measure
from inproc.cli.options import (
    acceptance_options, debug_options, debug_settings, exit_code, matrix_options, open_prompts, prompt_options,
    settings_with,
)
from inproc.errors import UsageError
from inproc.render.text import render_matrix
from inproc.plan.acceptance import from_flags
from inproc.profiles.spec import load_with_overrides
from inproc.units import parse_int_list, parse_tokens


@click.command(short_help="Measure one decode cell, all in this process.")
@click.argument("profile_path", metavar="PROFILE")
@click.option("--context", required=True, help="Context length L, e.g. 8K.")
@click.option("--concurrency", required=True, help="Requests in flight C.")
@click.option("--prefill", is_flag=True, help="Also measure cold prefill at this context first.")
@matrix_options
@prompt_options
@acceptance_options
@debug_options(with_breakpoint=True)
def cell(profile_path, context, concurrency, prefill, sets, out, force, seed, loop_check, telemetry_hz, profiler,
         profile_steps, profile_skip, profile_dir, profile_with_stack, nvtx, break_at_step, break_at_slow_step, profile_slow, step_timeout,
         prompts_file, tokenizer, acceptance, acceptance_rates, **flags):
    """Measure one sustained-decode cell (and optionally its cold prefill).

    \b
    Look inside it (nothing here changes a figure: profiled steps come after the window):
      --profile torch --profile-steps 5      a trace of 5 steps right after the window
      --window-steps 50 --break-at-step 3    pdb right before window step 3, on the engine's thread
      --break-at-slow-step                   pdb right after the first slow step (p cause, p detail, p step)
      --profile-slow --profile-steps 20      a torch trace of the 20-step chunk holding the first slow step and the one before
      --profile cuda --nvtx                  under nsys profile --capture-range=cudaProfilerApi
      --kernel-steps 32 / --kernels off      the kernel pass (on here): a per-kernel table of 32 steps / none

    Exit codes as 'inproc run': 4 when the cell was not measured (Error, Over capacity, ...).
    """
    debug = debug_settings(out, profiler, profile_steps, profile_skip, profile_dir, profile_with_stack, nvtx, break_at_step,
                           break_at_slow_step, profile_slow)
    profile = load_with_overrides(profile_path, sets, from_flags(acceptance, acceptance_rates))
    text = open_prompts(profile, prompts_file, tokenizer)
    L = parse_tokens(context)
    C = parse_int_list(concurrency)
    if len(C) != 1:
        raise UsageError(f"Bad --concurrency {concurrency!r}: one cell takes one level; use 'inproc run' for several.")
    settings = settings_with(profile.matrix, contexts=(L,), concurrency=C, prefill_contexts=(L,) if prefill else (), **flags)
    if settings.kernels is None:  # neither the flag nor the profile said: one cell is looked into, so on
        settings = replace(settings, kernels=True)
    record = measure(profile, settings, loop_check=loop_check, telemetry_hz=telemetry_hz, out=out, seed=seed, force=force,
                     debug=debug, step_timeout=step_timeout, text=text)
    click.echo(render_matrix(record))
    if out:
        click.echo(f"\nresults: {out}")
    return exit_code(record)
