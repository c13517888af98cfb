"""``inproc cell PROFILE --context L --concurrency C``: one decode cell, all in this process.

Made for reproducing a cell under a debugger or profiler: no subprocess anywhere.
"""
from __future__ import annotations

import click

from inproc.cli.options import TerminalSink, command_line, loop_settings, matrix_options, settings_with
from inproc.errors import UsageError
from inproc.render.text import render_matrix
from inproc.profiles.spec import load_with_overrides
from inproc.run.session import run_matrix
from inproc.units import parse_int_list, parse_tokens


@click.command()
@click.argument("profile_path", metavar="PROFILE")
@click.option("--context", required=True, help="Context length L, e.g. 8K.")
@click.option("--concurrency", required=True, help="Requests in flight C.")
@click.option("--prefill", is_flag=True, help="Also measure cold prefill at this context first.")
@matrix_options
def cell(profile_path, context, concurrency, prefill, sets, out, force, seed, loop_check, telemetry_hz, **flags):
    """Measure one sustained-decode cell (and optionally its cold prefill)."""
    profile = load_with_overrides(profile_path, sets)
    L = parse_tokens(context)
    C = parse_int_list(concurrency)
    if len(C) != 1:
        raise UsageError(f"Bad --concurrency {concurrency!r}: one cell takes one level; use 'inproc run' for several.")
    settings = settings_with(profile.matrix, contexts=(L,), concurrency=C, prefill_contexts=(L,) if prefill else (), **flags)
    record = run_matrix(profile, settings, out=out, seed=seed, force=force, command=command_line(), loops=loop_settings(loop_check),
                        telemetry_hz=telemetry_hz or None,
                        progress=TerminalSink())
    click.echo(render_matrix(record))
    if out:
        click.echo(f"\nresults: {out}")
