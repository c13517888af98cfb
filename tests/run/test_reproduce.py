"""The reproduce command of a cell carries every flag that changes its figures or status."""
from __future__ import annotations

import shlex

import pytest

from inproc.cli.cell_cmd import cell as cell_command
from inproc.measure.loops import LoopSettings
from inproc.plan.matrix import CellPlan
from inproc.plan.settings import MatrixSettings
from inproc.record.schema import RunPlan
from inproc.run.cell import reproduce_command
from inproc.telemetry.sampler import DEFAULT_HZ


def parsed(command: str) -> dict:
    """The parameters ``inproc cell`` reads from a reproduce command (parsed by the command itself)."""
    argv = shlex.split(command)
    assert argv[:2] == ["inproc", "cell"]
    return cell_command.make_context("cell", argv[2:]).params


@pytest.mark.parametrize("loop_check, hz", [(False, 2.5), (False, None), (True, DEFAULT_HZ), (True, 20.0)])
def test_loop_check_and_telemetry_rate_are_reproduced(loop_check, hz):
    s = MatrixSettings(window_s=7.0, max_output=64, prompt_mode="distinct", temperature=0.0, window_steps=12,
                       anatomy=False)
    plan = RunPlan(s, seed=11, loops=LoopSettings(enabled=loop_check), telemetry_hz=hz)
    cmd = reproduce_command("p.toml", ("max-num-seqs=4",), plan, CellPlan(2048, 8, 64, None))
    p = parsed(cmd)
    assert p["loop_check"] is loop_check
    assert p["telemetry_hz"] == (hz or 0.0)  # a run without sampling reproduces with --telemetry-hz 0
    assert (p["window_s"], p["window_steps"], p["max_output"], p["prompt_mode"]) == (7.0, 12, 64, "distinct")
    assert (p["temperature"], p["seed"], p["anatomy"], p["sets"]) == (0.0, 11, False, ("max-num-seqs=4",))
    assert (p["context"], p["concurrency"]) == ("2048", "8")


def test_defaults_add_no_flags():
    plan = RunPlan(MatrixSettings(), seed=1, telemetry_hz=DEFAULT_HZ)
    cmd = reproduce_command("p.toml", (), plan, CellPlan(8192, 1, 4096, None))
    assert "--no-loop-check" not in cmd and "--telemetry-hz" not in cmd and "--anatomy" not in cmd
