"""``inproc baseline RUN... -o BASELINE.json``: fold several runs of one profile into a baseline."""
from __future__ import annotations

from pathlib import Path

import click

from inproc.compare.keys import check_allow_keys, check_one_profile
from inproc.compare.samples import SubWindowing
from inproc.errors import UsageError
from inproc.record.baseline import load_runs
from inproc.record.summary import write_baseline
from inproc.record.damage import require_raw


@click.command(short_help="Fold several runs into one compact baseline.")
@click.argument("run_paths", metavar="RUN...", nargs=-1, required=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The baseline file to write.")
@click.option("--force", is_flag=True, help="Overwrite the baseline file if it exists.")
@click.option("--allow-different", "allow", multiple=True, metavar="KEY",
              help="Fold runs although KEY differs between them (repeatable), as for 'inproc compare'.")
def baseline(run_paths, output, force, allow) -> None:
    """Fold RUN files (results files, or baselines) into one compact baseline: per run its figures, sub-window samples and step anatomy.

    Compared against a baseline of several runs, a new run is judged by the spread between
    runs; give runs made on different occasions (each 'inproc run' picks its own prompt seed).
    """
    allow = check_allow_keys(allow)
    out = Path(output)
    if out.exists() and not force:
        raise UsageError(f"Baseline file {output!r} exists. Pass --force to overwrite it, or choose another -o.")
    runs, labels = [], []
    for path in run_paths:
        side = load_runs(path)
        for rec in side.runs:
            require_raw(rec, "a baseline")  # each run is kept as its cells' samples
        runs += side.runs
        labels += [path] if len(side.runs) == 1 else [f"{path} (run {i + 1})" for i in range(len(side.runs))]
    seen: dict[tuple[str, int, str], str] = {}
    for rec, label in zip(runs, labels):
        ident = (rec.created, rec.plan.seed, rec.command)
        if ident in seen:
            raise UsageError(f"{label} is the same run as {seen[ident]} (created {rec.created}, seed {rec.plan.seed}). "
                             "Give each run once.")
        seen[ident] = label
    check_one_profile(runs, labels, allow, "The baseline")
    write_baseline(out, runs, labels, SubWindowing())
    click.echo(f"baseline: {output} ({len(runs)} run{'s' if len(runs) > 1 else ''} of {runs[0].profile.name})", err=True)
    for rec, label in zip(runs, labels):
        for e in rec.decode:
            if e.disturbed:  # kept in the file; compare leaves the cell out of its verdict
                click.echo(f"baseline: {e.key} of {label} is kept but left out of verdicts: {e.disturbed}", err=True)
