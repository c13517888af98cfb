"""Child processes of the tests (``python -m inproc …`` from this checkout), and the engine-tier guard.

Every test that builds an engine or starts a child process is in the engine tier
(``@pytest.mark.engine``, mostly marked by ``tests/conftest.py`` from the fixtures it uses);
``pytest -m "not engine"`` is the fast tier. The guard keeps that mark honest: while an
unmarked test runs, building an engine (``conftest`` wraps each adapter's ``build`` and
``run_worker``) or starting a child here fails the test, whatever ``-m`` selected.
"""
from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import zygote

ROOT = Path(__file__).resolve().parent.parent
CPU_SUPPORT = ROOT / "tests" / "cpu_support"
#: Packages ``vllm`` and ``sglang`` that refuse to be imported, first on the children's path while a test marked
#: ``engine_free`` runs: its children must run as on an install without engines (the SGLang venv's tier leaves
#: such tests to the vLLM venv's, so a child that did build an engine would go untested there).
NO_ENGINES = ROOT / "tests" / "no_engines"

#: Node id of the running test when it is NOT marked ``engine`` (``None`` while an engine test runs).
#: Starts refusing: nothing builds an engine or starts a child outside a test.
_unmarked: str | None = "(outside a test)"
#: Whether the running test is marked ``engine_free``.
_engine_free = False
#: Set while :func:`run_main` runs a command in the test's own process: it must stop before building anything.
_in_process: str | None = None


def set_running(nodeid: str, engine_marked: bool, engine_free: bool = False) -> None:
    """Called by ``tests/conftest.py`` as each test's setup begins (fixtures included)."""
    global _unmarked, _engine_free
    _unmarked = None if engine_marked else nodeid
    _engine_free = engine_free


def refuse_unless_engine_test(what: str) -> None:
    """Fail the running test (``pytest.fail``, which ``except Exception`` does not swallow) unless it is marked ``engine``
    and no command runs in its own process (:func:`run_main`)."""
    if _in_process is not None:
        pytest.fail(f"{_in_process} {what}: a command run in the test's process must stop before building an engine "
                    "or starting a child (use run_inproc for one that runs)", pytrace=False)
    if _unmarked is not None:
        pytest.fail(f"{_unmarked} {what} but is not marked engine: mark it @pytest.mark.engine or use an engine "
                    "fixture (run_inproc, engine, vllm_engine, …), so `pytest -m \"not engine\"` stays fast", pytrace=False)


def guarded(method, what: str):
    """``method`` behind :func:`refuse_unless_engine_test` (conftest wraps the adapters' ``build`` / ``run_worker``)."""
    def call(*args, **kwargs):
        refuse_unless_engine_test(what)
        return method(*args, **kwargs)

    call.__wrapped__ = method
    return call


def child_env(sglang_support: bool | None = None, **extra: str) -> dict[str, str]:
    """This environment with this checkout first on ``PYTHONPATH`` (it wins over an editable install).

    ``sglang_support`` appends SGLang's import-only CPU stand-ins (``tests/cpu_support``);
    by default only where SGLang is installed, so no other environment sees them. While a
    test marked ``engine_free`` runs, :data:`NO_ENGINES` comes first: its children cannot import an engine.
    """
    if sglang_support is None:
        from tests.conftest import INSTALLED

        sglang_support = INSTALLED["sglang"]
    env = dict(os.environ)
    paths = [*([str(NO_ENGINES)] if _engine_free else []), str(ROOT),
             *filter(None, env.get("PYTHONPATH", "").split(os.pathsep)), *([str(CPU_SUPPORT)] if sglang_support else [])]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))  # each once, in this order
    env.update(extra)
    return env


def inproc_command(*args: str) -> list[str]:
    """``python -m inproc ARGS`` with this test run's interpreter."""
    return [sys.executable, "-m", "inproc", *map(str, args)]


def run_child(cmd: list[str], timeout: float = 600, env: dict[str, str] | None = None,
              **kwargs) -> subprocess.CompletedProcess:
    """Run ``cmd`` (which runs inproc) in the checkout to its end; output captured as text.

    A ``python -m inproc`` child is forked from the session's fork server (``tests/zygote.py``) wherever
    that is exact; ``INPROC_TEST_NO_ZYGOTE=1`` makes every child a fresh process."""
    refuse_unless_engine_test(f"runs {' '.join(map(str, cmd[:4]))} …")
    kwargs.setdefault("capture_output", True)
    env = env or child_env()
    if zygote.serves(cmd, env, kwargs, _engine_free):
        return zygote.run(cmd, cwd=ROOT, env=env, text=True, timeout=timeout, **kwargs)
    return subprocess.run(cmd, cwd=ROOT, env=env, text=True, timeout=timeout, **kwargs)


def start_child(cmd: list[str], env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    """Start ``cmd`` (which runs inproc) in the checkout and return at once; the caller waits."""
    refuse_unless_engine_test(f"starts {' '.join(map(str, cmd[:4]))} …")
    env = env or child_env()
    popen = zygote.ZygotePopen if zygote.serves(cmd, env, kwargs, _engine_free) else subprocess.Popen
    return popen(cmd, cwd=ROOT, env=env, **kwargs)


def run_inproc(*args: str, timeout: float = 600, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """``python -m inproc ARGS`` to its end (what the ``run_inproc`` fixture returns)."""
    return run_child(inproc_command(*args), timeout=timeout, env=env, **kwargs)


def start_inproc(*args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    """``python -m inproc ARGS`` started, not waited for (kill / resume tests)."""
    return start_child(inproc_command(*args), env=env, **kwargs)


@contextmanager
def _running_in_process(what: str):
    global _in_process
    before, _in_process = _in_process, what
    try:
        yield
    finally:
        _in_process = before


def run_main(capfd, *args: str) -> subprocess.CompletedProcess:
    """``inproc ARGS`` in the test's own process, for a command that must stop at bad input before it builds an
    engine or starts a child (either fails the test); costs no interpreter start and no engine import.

    Its output is read from file descriptors 1 and 2 (``capfd``), so whatever an engine library
    prints there counts as a child's would; its exit status is the ``SystemExit`` code; any other
    exception propagates and fails the test (a child would print its traceback). Environment
    variables it sets are put back.
    """
    from inproc.cli.main import main

    capfd.readouterr()  # what the test printed before is not the command's
    env, code = dict(os.environ), 0
    try:
        with _running_in_process(f"inproc {' '.join(map(str, args[:2]))} (run in the test's process)"):
            main([str(a) for a in args])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        for key in os.environ.keys() - env.keys():
            del os.environ[key]
        os.environ.update(env)
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(["inproc", *map(str, args)], code, out, err)


#: A child that runs inproc's ``main`` once per argv given (a JSON list), each with its own fds 1 and 2.
_MAINS = """
import json, os, sys, tempfile, traceback
from inproc.cli.main import main
results = []
for argv in json.loads(sys.argv[1]):
    env = dict(os.environ)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush(); sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
        code = 0
        try:
            main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc(); code = 1
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2)
            os.environ.clear(); os.environ.update(env)
        out.seek(0); err.seek(0)
        results.append([code, out.read().decode(errors="replace"), err.read().decode(errors="replace")])
print("RESULTS " + json.dumps(results))
from inproc.cli.main import end_process
end_process(0)
"""


def run_mains(*argvs: list[str], timeout: float = 600) -> list[subprocess.CompletedProcess]:
    """Several ``inproc ARGV`` in ONE child, one after another (one interpreter start and engine import for all):
    for commands that stop at bad input inside an engine adapter, where :func:`run_main` may not go.

    Each gets its own stdout and stderr (fds 1 and 2) and exit status, and the environment as it
    was; an exception is printed as a traceback with status 1, as a child of its own would.
    """
    import json

    p = run_child([sys.executable, "-c", _MAINS, json.dumps([[str(a) for a in argv] for argv in argvs])], timeout=timeout)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULTS ")), None)
    assert p.returncode == 0 and line, p.stderr[-3000:]
    return [subprocess.CompletedProcess(["inproc", *argv], code, out, err)
            for argv, (code, out, err) in zip(argvs, json.loads(line[len("RESULTS "):]))]
