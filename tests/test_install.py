"""``pip install inproc`` alone (no engine, no extra) gives working reading commands.

A fresh venv gets this checkout from its ``pyproject.toml`` with nothing else; then
``inproc compare``, ``baseline``, ``history`` and ``report`` run from that venv's ``bin`` on
the saved fixtures. What they need beyond the standard library (scipy's t quantiles,
ruptures' change points, numpy, click) must come from the declared dependencies, and no
engine is there to lean on. Needs PyPI (or the machine's pip index); about half a minute
with pip's cache warm.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import spawn

pytestmark = pytest.mark.engine_free  # its children run commands that build no engine: one venv runs them

ROOT = Path(__file__).resolve().parents[1]
COMPARE = ROOT / "tests" / "fixtures" / "compare"
HISTORY = ROOT / "tests" / "fixtures" / "history"
RUN1, RUN2, RUN3 = (str(COMPARE / f"run-{i}.json") for i in (1, 2, 3))


def _run(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory) -> Path:
    """A venv holding inproc as ``pip install`` makes it from this checkout, and only its dependencies."""
    spawn.refuse_unless_engine_test("installs inproc into a fresh venv")
    tmp = tmp_path_factory.mktemp("bare")
    # A copy of what the wheel is built from: an in-tree build leaves build/ and *.egg-info beside its source.
    src = tmp / "src"
    shutil.copytree(ROOT / "inproc", src / "inproc", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], tmp)
    assert made.returncode == 0, made.stderr
    pip = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(src)], tmp)
    assert pip.returncode == 0, pip.stderr[-3000:]
    return venv


@pytest.mark.long
@pytest.mark.engine
def test_the_reading_commands_run_without_an_engine(bare_venv, tmp_path):
    python, inproc = str(bare_venv / "bin" / "python"), str(bare_venv / "bin" / "inproc")
    for engine in ("vllm", "sglang", "torch"):
        probe = _run([python, "-c", f"import {engine}"], tmp_path)
        assert probe.returncode == 1 and "ModuleNotFoundError" in probe.stderr, engine
    where = _run([python, "-c", "import inproc; print(inproc.__file__)"], tmp_path)
    assert str(bare_venv) in where.stdout, where  # the installed copy, not this checkout

    base = tmp_path / "base.json"
    expected = [  # (arguments, exit code): what the saved runs imply
        (["compare", RUN1, RUN2], 3),  # no regression, but rows one run each side could not judge (too few samples)
        (["compare", RUN2, RUN3, "--run-spread", "0%"], 1),  # 1K x 4 1.06x slower, significant with no run spread
        (["baseline", RUN1, RUN2, "-o", str(base)], 0),
        (["compare", str(base), RUN3], 0),
        (["history", str(HISTORY)], 0),
        (["report", RUN1], 0),
        (["report", RUN1, "--format", "html", "-o", str(tmp_path / "r.html")], 0),
    ]
    for args, code in expected:
        p = _run([inproc, *args], tmp_path)
        assert p.returncode == code and "Traceback" not in p.stderr, (args, p.returncode, p.stderr[-3000:])
        assert p.stdout or args[0] == "baseline" or "-o" in args, args
    assert base.is_file() and (tmp_path / "r.html").stat().st_size > 0
