"""What a first-time user sees: bare commands show their help, every command has a whole-sentence summary."""
from __future__ import annotations

import click
import pytest

from inproc.cli.main import cli, main


@pytest.mark.parametrize("argv, usage", [([], "Usage: inproc [OPTIONS] COMMAND"),
                                         (["profile"], "Usage: inproc profile [OPTIONS] COMMAND")])
def test_a_bare_group_prints_its_help_and_exits_0(argv, usage, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    out = capsys.readouterr()
    assert e.value.code == 0
    assert out.out.startswith(usage) and "Commands:" in out.out
    assert "Error" not in out.out + out.err


def groups():
    yield "inproc", cli
    for name, command in cli.commands.items():
        if isinstance(command, click.Group):
            yield f"inproc {name}", command


@pytest.mark.parametrize("name, group", list(groups()))
def test_every_command_lists_a_whole_sentence(name, group):
    for sub, command in group.commands.items():
        text = command.get_short_help_str(limit=60)
        assert command.short_help, f"{name} {sub}: no short_help"
        assert text == command.short_help, f"{name} {sub}: cut to {text!r}"
        assert text.endswith(".") and "..." not in text and "…" not in text, f"{name} {sub}: {text!r}"
        assert text[0].isupper(), f"{name} {sub}: {text!r}"


def test_the_command_list_fits_one_line_each(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out.split("Commands:\n", 1)[1].splitlines()
    assert len(listed) == len(cli.commands)  # none wraps onto a second line
