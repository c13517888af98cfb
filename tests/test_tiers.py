"""The fast tier is honest: an unmarked test cannot build an engine or start ``inproc``.

These tests are themselves unmarked (fast tier), so each engine build or child start
below must fail before anything is built or started.
"""
from __future__ import annotations

import pytest

from inproc import engines
from inproc.types import LaunchSpec
from tests import spawn
from tests.conftest import ENGINE_FIXTURES, is_engine_test


def test_this_test_is_in_the_fast_tier(request):
    assert request.node.get_closest_marker("engine") is None and not is_engine_test(request.node)


@pytest.mark.parametrize("engine", engines.names())
def test_building_an_engine_fails_an_unmarked_test(engine):
    launch = LaunchSpec(engine, "/no/such/model", {}, {})
    with pytest.raises(pytest.fail.Exception, match=rf"builds a .* engine \(build\) but is not marked engine"):
        engines.build_engine(launch)
    with pytest.raises(pytest.fail.Exception, match=r"\(run_worker\) but is not marked engine"):
        engines.run_worker(launch, 1, print)


def test_starting_inproc_fails_an_unmarked_test(tmp_path):
    marker = tmp_path / "started"
    with pytest.raises(pytest.fail.Exception, match="runs .* but is not marked engine"):
        spawn.run_inproc("--help")
    with pytest.raises(pytest.fail.Exception, match="starts .* but is not marked engine"):
        spawn.start_child(["touch", str(marker)])
    assert not marker.exists()  # refused before the process started


def test_guard_failure_is_not_swallowed_by_except_exception():
    """``pytest.fail`` raises a BaseException: a test's broad ``except Exception`` cannot hide the build."""
    try:
        engines.build_engine(LaunchSpec("vllm", "/no/such/model", {}, {}))
    except Exception:  # noqa: BLE001 - the point of the test
        pytest.fail("the guard raised an Exception subclass")
    except pytest.fail.Exception as refused:
        assert "not marked engine" in str(refused)


def test_a_command_run_in_the_tests_process_gets_its_output_and_status_and_may_not_build(tmp_path, capfd):
    import os

    print("before")  # the test's own output is not the command's
    bad = spawn.run_main(capfd, "report-typo")
    assert (bad.returncode, bad.stdout) == (2, "") and bad.stderr.startswith("Error: No such command 'report-typo'")
    assert spawn.run_main(capfd, "--help").returncode == 0
    env = dict(os.environ)
    missing = LaunchSpec("vllm", "/no/such/model", {}, {})
    with pytest.raises(pytest.fail.Exception, match=r"\(run in the test's process\) builds .* must stop before building"):
        with spawn._running_in_process("inproc cell (run in the test's process)"):
            engines.build_engine(missing)  # what a command that went on to build would reach
    with pytest.raises(pytest.fail.Exception, match=r"\(run in the test's process\) runs .* must stop before"):
        with spawn._running_in_process("inproc sweep (run in the test's process)"):
            spawn.run_inproc("--help")
    assert dict(os.environ) == env


@pytest.mark.engine
def test_a_marked_test_may_start_inproc(run_inproc):
    p = run_inproc("--help", timeout=120)
    assert p.returncode == 0 and "Usage" in p.stdout


def test_engine_fixtures_mark_a_test_and_a_parametrized_name_does_not():
    class Item:  # what is_engine_test reads of a collected item
        def __init__(self, fixturenames, marks=()):
            self.fixturenames, self._marks = fixturenames, marks

        def get_closest_marker(self, name):
            return next((m for m in self._marks if m.name == name), None)

        def iter_markers(self, name):
            return (m for m in self._marks if m.name == name)

    assert ENGINE_FIXTURES >= {"vllm_engine", "sglang_engine", "engine", "run_inproc"}
    for name in sorted(ENGINE_FIXTURES):
        assert is_engine_test(Item(["tmp_path", name]))
    assert not is_engine_test(Item(["tmp_path", "engine"], [pytest.mark.parametrize("engine", ["vllm"]).mark]))
    assert not is_engine_test(Item(["tmp_path", "capsys"]))


def test_a_tier_that_requires_an_engine_stops_when_it_is_missing():
    from tests.conftest import missing_required

    assert missing_required((), {"vllm": False, "sglang": False}) == ""  # the fast tier needs none
    assert missing_required(("vllm",), {"vllm": True, "sglang": False}) == ""
    why = missing_required(("sglang",), {"vllm": True, "sglang": False})
    assert why.startswith("INPROC_REQUIRE_ENGINE=sglang but sglang is not installed in ") and "setup_sglang.sh" in why
    assert missing_required(("vlm",), {"vllm": True, "sglang": True}) == \
        "INPROC_REQUIRE_ENGINE names 'vlm'. Known engines: sglang, vllm."


@pytest.mark.engine
@pytest.mark.engine_free
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_child_of_an_engine_free_test_cannot_import_an_engine(engine):
    """What keeps the ``engine_free`` mark honest where the engine is installed: the SGLang venv leaves such tests out."""
    import os
    import sys

    done = spawn.run_child([sys.executable, "-c", f"import {engine}"], timeout=60)
    assert done.returncode == 1 and f"No module named '{engine}' (a child of a test marked engine_free" in done.stderr
    env = spawn.child_env()
    assert env["PYTHONPATH"].split(os.pathsep)[:2] == [str(spawn.NO_ENGINES), str(spawn.ROOT)]
