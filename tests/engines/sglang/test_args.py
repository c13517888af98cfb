"""Profiles against the installed SGLang (run in .venv-sglang; skipped where sglang is not importable)."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from inproc.profiles.spec import load_profile

from inproc.engines.sglang import args as sglang_args
from tests.conftest import needs_sglang

pytestmark = needs_sglang

ROOT = Path(__file__).resolve().parents[3]
LAUNCH_COMMAND = ROOT / "tests" / "fixtures" / "reference" / "sglang-deepseek-v4-flash-vision-h200x4.cmd"
SHIPPED = ROOT / "launch_profiles" / "sglang-deepseek-v4-flash-vision-h200x4.toml"
# Server-only flags of that command, and the ServerArgs fields they fill.
DROPPED_FIELDS = {"host", "port", "api_key", "served_model_name", "reasoning_parser", "tool_call_parser"}


def _published_command() -> list[str]:
    """The published SGLang matrix's launch command, as its page printed it (docs/reference-matrices.md)."""
    lines = [ln for ln in LAUNCH_COMMAND.read_text().splitlines() if ln and not ln.startswith("#")]
    return shlex.split(lines[0])


def _differing(a, b) -> set[str]:
    mine, theirs = sglang_args.settings(a), sglang_args.settings(b)
    return {k for k in mine if mine[k] != theirs[k]}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    from inproc.profiles.importer import import_command, render

    result = import_command(_published_command())
    path = tmp_path_factory.mktemp("imported") / "sglang-ref.toml"
    path.write_text(render(result))
    return result, path


def test_round_trip_gives_what_sglang_serve_parses(imported):
    result, path = imported
    profile = load_profile(path)
    argv = _published_command()
    assert Path(argv[0]).name == "sglang" and argv[1] == "serve"
    ours = sglang_args.parse_profile(profile.model, profile.engine_args)
    theirs = sglang_args.reference_server_args(argv[2:])  # SGLang's own prepare_server_args
    assert _differing(ours, theirs) == DROPPED_FIELDS
    assert profile.gpus == 4 and ours.tp_size == 4 and ours.moe_runner_backend == "marlin"


def test_imported_command_holds_no_api_key(imported):
    result, path = imported
    text = path.read_text()
    profile = load_profile(path)
    assert "--api-key" in result.withheld
    assert "api-key" not in profile.engine_args and "api_key" not in profile.engine_args
    assert "api-key = " not in text and "--api-key" not in {f for f, _ in result.dropped}


def test_api_key_value_never_reaches_the_file(tmp_path):
    from inproc.profiles.importer import import_command, render

    key = "sk-" + "s" * 32
    argv = _published_command()
    argv[argv.index("--api-key") + 1] = key
    text = render(import_command(argv))
    assert key not in text and "<redacted>" in text


def test_shipped_profile_is_the_imported_command(imported):
    _, path = imported
    assert load_profile(SHIPPED).engine_args == load_profile(path).engine_args


def test_python_m_launch_server_and_positional_model_read_the_same():
    from inproc.profiles.importer import import_command

    a = import_command(["python", "-m", "sglang.launch_server", "--model-path", "org/m", "--tp", "2", "--page-size", "64"])
    b = import_command(["sglang", "serve", "org/m", "--tensor-parallel-size", "2", "--page-size=64", "--model-type", "llm"])
    assert a.engine_args == b.engine_args == {"tp-size": 2, "page-size": 64}


def test_check_runs_argument_level_without_gpus(capsys):
    from inproc.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["profile", "check", str(SHIPPED)])
    out, err = capsys.readouterr()
    assert e.value.code == 0, err
    assert "ok       arguments      6 read by SGLang" in out and "skipped  engine config  needs 4 GPUs" in out


def test_unknown_sglang_argument_names_the_closest(tmp_path, capsys):
    from inproc.cli.main import main

    f = tmp_path / "p.toml"
    f.write_text('engine = "sglang"\nmodel = "org/m"\ngpus = 1\n[engine_args]\nmem-fraction-statik = 0.8\n')
    with pytest.raises(SystemExit) as e:
        main(["profile", "check", str(f)])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"Error: {f}: Unknown SGLang argument 'mem-fraction-statik'. Closest: mem-fraction-static")
