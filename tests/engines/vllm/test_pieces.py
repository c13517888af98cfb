"""vLLM pieces found where each version keeps them, and a missing one named in one line.

The ``simulated_0_33`` test re-homes vLLM 0.32's serve parser where 0.33 keeps it and hides the
old module (through ``sys.modules``, in a child process), so that what runs is 0.33's layout.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from inproc.engines import pieces as base
from inproc.engines.vllm import ADAPTER
from inproc.engines.vllm import args as vllm_args
from tests.conftest import needs_vllm
from tests.spawn import run_child

pytestmark = needs_vllm

_SIMULATED_0_33 = textwrap.dedent("""
    import sys, types
    from inproc.engines.vllm import ADAPTER, args
    ADAPTER.quiet()  # as the adapter does before its first import of vllm
    import vllm.entrypoints.launchers.cli_args as old
    moved = types.ModuleType("vllm.entrypoints.common.cli_args")
    moved.make_arg_parser = old.make_arg_parser
    sys.modules["vllm.entrypoints.common.cli_args"] = moved
    sys.modules["vllm.entrypoints.launchers.cli_args"] = None  # importing it now fails, as on 0.33
    import vllm.entrypoints.common as common
    common.cli_args = moved
    from inproc.cli.main import run_process
    run_process(sys.argv[1:])
""")


def _inproc(code: str, *argv: str) -> subprocess.CompletedProcess:
    return run_child([sys.executable, "-c", code, *argv], timeout=300)


@pytest.mark.long
@pytest.mark.engine  # starts inproc
def test_profile_import_finds_the_serve_parser_where_0_33_keeps_it_simulated_0_33(tmp_path):
    out = tmp_path / "imported.toml"
    p = _inproc(_SIMULATED_0_33, "profile", "import", "-o", str(out), "--", "vllm", "serve", "org/m",
                "--max-model-len", "4096", "--port", "8001")
    assert p.returncode == 0, p.stderr[-3000:]
    text = out.read_text()
    assert 'model = "org/m"' in text and "max-model-len = 4096" in text and "port" not in text.split("[engine_args]")[1]


@pytest.mark.long
@pytest.mark.engine  # starts inproc
def test_a_serve_parser_missing_everywhere_is_one_line(tmp_path):
    code = _SIMULATED_0_33.replace('sys.modules["vllm.entrypoints.common.cli_args"] = moved',
                                   'sys.modules["vllm.entrypoints.common.cli_args"] = None')
    p = _inproc(code, "profile", "import", "-o", str(tmp_path / "x.toml"), "--", "vllm", "serve", "org/m")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    (line,) = p.stderr.strip().splitlines()
    for location in vllm_args.SERVE_PARSER:
        assert repr(location) in line
    assert line.startswith("Error: vLLM ") and ADAPTER.tested_range() in line and not (tmp_path / "x.toml").exists()


def test_require_follows_known_locations_and_names_what_is_missing():
    parser_cls = base.require(ADAPTER, "vllm.utils.nowhere:FlexibleArgumentParser", *vllm_args.ARGUMENT_PARSER)
    assert parser_cls.__name__ == "FlexibleArgumentParser"
    with pytest.raises(base.MissingPiece, match=r"has no 'vllm\.nope:x' or 'vllm\.engine\.arg_utils:Nope'"):
        base.require(ADAPTER, "vllm.nope:x", "vllm.engine.arg_utils:Nope")
    with pytest.raises(base.MissingPiece, match=r"has no 'engine_core\.scheduler' on object"):
        base.require(ADAPTER, "engine_core.scheduler", on=object())


def test_a_failed_engine_import_inside_the_adapter_is_one_line():
    with pytest.raises(base.MissingPiece) as caught:
        with base.engine_imports(ADAPTER):
            from vllm.engine.arg_utils import NoSuchThing  # noqa: F401
    assert "has no 'vllm.engine.arg_utils.NoSuchThing'" in str(caught.value) and "\n" not in str(caught.value)
