"""What ``inproc run`` and ``inproc cell`` share once their flags are read: the matrix measured with
the terminal's progress, and this command line recorded."""
from __future__ import annotations

from typing import Any

from inproc.cli.options import TerminalSink, command_line, loop_settings
from inproc.profiles.spec import Profile
from inproc.plan.settings import MatrixSettings
from inproc.record.schema import RunRecord
from inproc.run.session import run_matrix


def measure(profile: Profile, settings: MatrixSettings, *, loop_check: bool, telemetry_hz: float | None,
            **run: Any) -> RunRecord:
    """``run_matrix`` as the commands call it: progress on the terminal, the command line in the record,
    the loop check and telemetry rate from their flags (--telemetry-hz 0: no telemetry, recorded as None)."""
    return run_matrix(profile, settings, command=command_line(), loops=loop_settings(loop_check),
                      telemetry_hz=telemetry_hz or None, progress=TerminalSink(), **run)

