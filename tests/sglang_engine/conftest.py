"""Tests that run SGLang's real scheduler in this process: ONE engine per test session.

Run with the SGLang venv (``bash scripts/setup_sglang.sh`` makes it)::

    .venv-sglang/bin/python -m pytest tests/sglang_engine -q

Elsewhere (the vLLM venv) every test here is skipped, with the reason.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "launch_profiles" / "cpu-sglang-tiny-llama.toml"
CPU_SUPPORT = ROOT / "tests" / "cpu_support"


def _sglang_installed() -> bool:
    spec = importlib.util.find_spec("sglang")
    # Under pytest, tests/ is on sys.path, so this very folder (a folder named sglang, no
    # __init__.py) is found as a namespace package named sglang: no origin, no SGLang.
    return spec is not None and spec.origin is not None


HAS_SGLANG = _sglang_installed()
SKIP_REASON = "SGLang is not installed here; run `bash scripts/setup_sglang.sh`, then `.venv-sglang/bin/python -m pytest tests/sglang_engine`"

if HAS_SGLANG and str(CPU_SUPPORT) not in sys.path:
    # Import-only stand-ins for torchvision / sgl_kernel (no CPU build). Appended, so a
    # real package wins; only where SGLang is installed, so no other venv sees them.
    sys.path.append(str(CPU_SUPPORT))

if HAS_SGLANG:
    # As build_engine does, but before any test module imports SGLang: it reads
    # SGLANG_USE_CPU_ENGINE when it is first imported.
    from inproc.profile import load_profile

    os.environ.update(load_profile(PROFILE).env)

needs_sglang = pytest.mark.skipif(not HAS_SGLANG, reason=SKIP_REASON)


@pytest.fixture(scope="session")
def sglang_tmpdir(tmp_path_factory):
    """A private temp folder for SGLang: its files there are this engine's, none other's.

    ``/tmp`` is shared with whatever else runs on the machine, so a before/after listing
    of it cannot tell this engine's leftovers from another process's files.
    """
    path = tmp_path_factory.mktemp("sglang-tmp")
    previous, tempfile.tempdir = tempfile.tempdir, str(path)
    yield path
    tempfile.tempdir = previous


@pytest.fixture(scope="session")
def sglang_engine(sglang_tmpdir):
    """The shipped CPU profile's engine: tiny Llama, 6,144 KV tokens, max-running-requests 8."""
    if not HAS_SGLANG:
        pytest.skip(SKIP_REASON)
    from inproc.engines import build_engine
    from inproc.profile import load_profile

    engine = build_engine(load_profile(PROFILE))
    yield engine
    engine.shutdown()  # a no-op when test_shutdown_leaves_nothing already ran


@pytest.fixture()
def idle_engine(sglang_engine):
    """The session engine, drained and with a cold prefix cache."""
    if sglang_engine._launched is None:
        pytest.skip("the session engine was shut down by an earlier test")
    run_until_idle(sglang_engine)
    assert sglang_engine.reset_prefix_cache()
    return sglang_engine


def run_until_idle(engine, max_steps: int = 10_000) -> list:
    """Step until nothing is waiting or running; returns every StepResult."""
    results = []
    while engine.has_unfinished():
        assert len(results) < max_steps, "engine did not drain"
        results.append(engine.step())
    return results


def spawn_env() -> dict[str, str]:
    """Environment for a child Python that must import SGLang from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")]), str(CPU_SUPPORT)])
    return env
