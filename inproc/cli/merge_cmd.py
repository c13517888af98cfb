"""``inproc merge SHARDS… -o RESULTS.json``: the shards of one plan as one results file."""
from __future__ import annotations

from pathlib import Path

import click

from inproc.cli.options import command_line
from inproc.errors import UsageError
from inproc.record.damage import require_raw
from inproc.record.io import load_results, write_results, write_text_atomic
from inproc.record.merge import merge_shards
from inproc.render.markdown import render_markdown
from inproc.render.text import render_matrix


@click.command(short_help="Merge the shards of one plan into one results file.")
@click.argument("shard_paths", metavar="SHARDS...", nargs=-1, required=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The merged results JSON.")
@click.option("--force", is_flag=True, help="Overwrite an existing merged file.")
def merge(shard_paths: tuple[str, ...], output: str, force: bool) -> None:
    """Merge the results files of 'inproc run --shard 1/N' … '--shard N/N' (one plan) into one results file."""
    out = Path(output)
    for path in shard_paths:
        if out.exists() and Path(path).exists() and out.samefile(path):
            raise UsageError(f"-o {output!r} is one of the shards. Give a new path for the merged file.")
    if out.exists() and not force:
        raise UsageError(f"Results file {output!r} exists. Pass --force to overwrite it.")
    shards = [(path, load_results(path)) for path in shard_paths]
    for _, rec in shards:
        require_raw(rec, "a merge")  # the merged file holds every entry whole
    record = merge_shards(shards, command=command_line())
    write_results(out, record)
    write_text_atomic(out.with_suffix(".md"), render_markdown(record))
    click.echo(render_matrix(record))
    click.echo(f"\nmerged {len(shard_paths)} shards: {len(record.prefill)} prefill entries, {len(record.decode)} decode "
               f"cells\nresults: {out}\nreport:  {out.with_suffix('.md')}")
