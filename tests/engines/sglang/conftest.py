"""SGLang's real scheduler in this process: the session engine (``tests/conftest.py``) and its helpers.

Run with the SGLang venv (``bash scripts/setup_sglang.sh`` makes it)::

    .venv-sglang/bin/python -m pytest tests/engines/sglang -q

Elsewhere (the vLLM venv) every test here is skipped, with the reason.
"""
from __future__ import annotations

import pytest

from tests.conftest import CPU_SUPPORT, DEFAULT_PROFILES, ROOT, live, needs_sglang  # noqa: F401 - the tests here import them
from tests.spawn import child_env

PROFILE = DEFAULT_PROFILES["sglang"]


@pytest.fixture()
def engine(sglang_engine):
    """Engine-generic fixtures (driver, prompts) use the SGLang session engine here."""
    return live(sglang_engine)


@pytest.fixture()
def idle_engine(sglang_engine):
    """The session engine, drained and with a cold prefix cache."""
    live(sglang_engine)
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
    """Environment for a child Python that must import SGLang from this checkout (tests.spawn.child_env)."""
    return child_env(sglang_support=True)
