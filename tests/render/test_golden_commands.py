"""Every report command in every format, byte for byte as ``tests/fixtures/golden/commands/`` holds it.

The golden files were written by ``scripts/update_golden.py`` from ``scripts/golden_commands.py``;
a change to a report's rows, to a format's writer or to which writer a command picks that alters
any output fails here (e.g. a writer that drops a note, or a command that renders HTML with the
Markdown rows' order, differs from its file). Run the script after an intended change and review the diff.
"""
from __future__ import annotations

import pytest

from scripts.golden_commands import COMMANDS, GOLDEN_COMMANDS, command_reports


@pytest.fixture(scope="module")
def reports() -> dict[str, str]:
    return command_reports()


def test_every_command_has_its_golden_file():
    assert set(COMMANDS) == {p.name for p in GOLDEN_COMMANDS.iterdir()}, "run scripts/update_golden.py"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_commands_output_is_its_golden_file_byte_for_byte(reports, name):
    assert reports[name] == (GOLDEN_COMMANDS / name).read_text(), \
        f"{name}: run scripts/update_golden.py after an intended change"
