"""``inproc selftest [--engine NAME] [PROFILE]``: check the adapter's assumptions on the installed engine build."""
from __future__ import annotations

import sys

import click

from inproc import engines
from inproc.engines.pieces import MissingPiece
from inproc.errors import UsageError


@click.command(short_help="Check the adapter's assumptions on the installed engine.")
@click.argument("profile_path", metavar="[PROFILE]", required=False)
@click.option("--engine", "engine_name", help="Engine to check (default: the profile's, else the one installed here).")
@click.option("--out", help="Write the JSON record here (`inproc run --selftest FILE` attaches it to a results file).")
def selftest(profile_path, engine_name, out):
    """Build the tiny model on the installed engine, step it in every mode the adapter relies on, check what it reads.

    \b
    Exit 0 when every check holds, 1 when one does not (its row says why). With a PROFILE:
    that profile's engine settings, on the tiny model where the profile's model is not local.
    """
    from inproc.profiles.spec import load_profile
    from inproc.selftest import run_selftest
    from inproc.selftest.report import save, table

    profile = load_profile(profile_path) if profile_path else None
    name = engine_name or (profile.engine if profile else _installed_engine())
    engines.get(name)  # an unknown name is the one-line error
    if out and not out.endswith(".json"):
        raise UsageError(f"Bad --out {out!r}: the selftest record is JSON; name it FILE.json.")
    try:
        report = run_selftest(name, profile, echo=lambda line: click.echo(line, err=True))
    except MissingPiece as e:
        click.echo(f"selftest failed: {e}", err=True)
        sys.exit(1)
    click.echo(table(report))
    if out:
        save(report, out)
        click.echo(f"record: {out}")
    sys.exit(0 if report.passed else 1)


def _installed_engine() -> str:
    found = [n for n in engines.names() if engines.get(n).installed()]
    if len(found) != 1:
        what = f"both {' and '.join(found)} are" if found else "no engine is"
        raise UsageError(f"{what.capitalize()} installed here; choose one with --engine ({', '.join(engines.names())}).")
    return found[0]
