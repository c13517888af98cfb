"""``--anatomy on|off``: recorded in the plan, old files load as on, off leaves the step anatomy absent (never zero).

The end-to-end cell runs the real engine installed in this Python through the CLI.
"""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from inproc.cli.options import settings_with
from inproc.errors import UsageError
from inproc.measure.anatomy import OFF
from inproc.plan.settings import MatrixSettings
from inproc.record.io import load_results
from inproc.render.markdown import render_markdown
from inproc.render.html import render_html
from tests.conftest import DEFAULT_PROFILES, FIXTURES, INSTALLED, ROOT
from tests.spawn import child_env, inproc_command, run_child

ENGINE = next((name for name in ("vllm", "sglang", "transformers") if INSTALLED.get(name)), None)  # the first here


def _inproc(*args: str) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"} if ENGINE != "sglang" else child_env(sglang_support=True)
    return run_child(inproc_command(*args), env=env)


def test_the_setting_defaults_on_and_takes_only_booleans():
    assert MatrixSettings().anatomy is True
    assert settings_with(MatrixSettings(), anatomy=False).anatomy is False
    assert settings_with(MatrixSettings(), anatomy=None).anatomy is True  # not given: the profile's
    with pytest.raises(UsageError, match="Bad --anatomy 'off'.*a bool \\(True for on, False for off\\)"):
        settings_with(MatrixSettings(), anatomy="off")


def test_a_sweep_passes_the_flag_to_every_variant():
    from inproc.cli.sweep_cmd import _run_args
    from inproc.telemetry.sampler import DEFAULT_HZ

    def args(value):
        return _run_args("256x8", None, None, (), True, DEFAULT_HZ, {"anatomy": value, "window_s": 2.0})

    assert args(False) == ["--no-prefill", "--cells", "256x8", "--anatomy", "off", "--duration", "2"]
    assert "--anatomy" in args(True) and "--anatomy" not in args(None)  # not given: the profile's setting


def test_an_old_file_loads_as_on_and_off_drops_every_anatomy_figure(tmp_path):
    doc = json.loads((FIXTURES / "cpu-vllm-small.json").read_text())
    assert "anatomy" not in doc["plan"]  # written before the setting existed
    old = load_results(FIXTURES / "cpu-vllm-small.json")
    measured = [e for e in old.decode if e.figures is not None]
    assert old.settings.anatomy is True and measured
    # Its steps predate the accounting columns; the anatomy it has is the batch sizes, one per window step.
    assert all(sum(e.figures.anatomy.batch_sizes.values()) > 0 for e in measured)
    doc["plan"]["anatomy"] = False
    path = tmp_path / "off.json"
    path.write_text(json.dumps(doc))
    off = load_results(path)
    assert off.settings.anatomy is False
    for before, after in zip(old.decode, off.decode):
        if before.figures is None:
            continue
        assert after.figures.anatomy is None  # absent, not zero
        assert after.figures.total_tok_s == before.figures.total_tok_s and after.status == before.status
    md_on, md_off = render_markdown(old), render_markdown(off)
    assert OFF in md_off and OFF not in md_on and "Bytes and FLOPs" in md_on and "Bytes and FLOPs" not in md_off
    assert "Step anatomy</h2><p>Off (--anatomy off)" in render_html(off)


@pytest.mark.engine  # starts `inproc cell`
def test_a_bad_value_is_one_line_exit_2(tmp_path):
    out = tmp_path / "r.json"
    p = _inproc("cell", str(DEFAULT_PROFILES["vllm"]), "--context", "256", "--concurrency", "1", "--anatomy", "maybe",
                "--out", str(out))
    assert p.returncode == 2 and "'maybe' is not one of 'on', 'off'" in p.stderr and "Traceback" not in p.stderr
    assert not out.exists()
    bad = tmp_path / "bad.toml"
    bad.write_text(DEFAULT_PROFILES["vllm"].read_text() + 'anatomy = false\n')  # [matrix] is the last table
    p = _inproc("cell", str(bad), "--context", "256", "--concurrency", "1", "--out", str(out))
    assert p.returncode == 2 and 'anatomy must be "on" or "off" (as --anatomy); got false.' in p.stderr and not out.exists()


@pytest.mark.long
@pytest.mark.skipif(ENGINE is None, reason="no engine is installed in this Python")
@pytest.mark.engine  # starts `inproc cell`
def test_a_cell_with_anatomy_off_runs_without_the_accounting(tmp_path):
    out = tmp_path / "r.json"
    p = _inproc("cell", str(DEFAULT_PROFILES[ENGINE]), "--context", "256", "--concurrency", "2", "--duration", "1",
                "--max-output", "64", "--prompt-mode", "distinct", "--seed", "3", "--telemetry-hz", "0",
                "--anatomy", "off", "--out", str(out))
    assert p.returncode == 0, p.stderr[-3000:]
    rec = load_results(out)
    (cell,) = rec.decode
    assert rec.settings.anatomy is False and "--anatomy off" in cell.reproduce
    assert cell.figures.output_tokens > 0 and cell.figures.anatomy is None
    s = cell.trace.steps
    # The engine produced no batch shapes and no forward accounting in any step.
    assert (s.num_prefill_reqs == -1).all() and (s.graph_mode == -1).all() and np.isnan(s.flops).all()
    # The queues are still read: both requests seen running, none ever more.
    assert (s.num_running >= 0).all() and s.num_running.max() == 2 and (s.num_scheduled_tokens > 0).any()
    assert OFF in render_markdown(rec)
