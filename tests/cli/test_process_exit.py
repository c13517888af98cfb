"""The process's end (``inproc.cli.main.end_process``): exit handlers run, output flushed, the exit status kept,
only the interpreter's teardown skipped; a live thread, a message, a profiler or a debugger gets Python's normal exit."""
from __future__ import annotations

import atexit
import sys
import threading

import pytest

import inproc.cli.main as entry
from tests.spawn import run_child

pytestmark = pytest.mark.engine_free  # its children run commands that build no engine: one venv runs them


class Ended(Exception):
    """Stands in for ``os._exit`` inside the test's process (which must go on)."""

    def __init__(self, code: int):
        self.code = code


@pytest.fixture
def ends(monkeypatch):
    """What ``end_process`` did, in order: exit handlers run, streams flushed, the process ended with a code."""
    done: list[str] = []

    def ended(code: int):
        done.append(f"_exit {code}")
        raise Ended(code)

    class Stream:
        def __init__(self, name: str, fails: bool = False):
            self.name, self.fails = name, fails

        def flush(self) -> None:
            done.append(f"flush {self.name}")
            if self.fails:
                raise BrokenPipeError(32, "Broken pipe")

    def install():  # in the test's body: pytest puts its own stdout and stderr back as each phase begins
        monkeypatch.setattr(sys, "stdout", Stream("stdout", fails=True))  # a reader that went away: still ends
        monkeypatch.setattr(sys, "stderr", Stream("stderr"))
        return done

    monkeypatch.setattr(entry.os, "_exit", ended)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: done.append("exit handlers"))
    return install


@pytest.mark.parametrize("code, status", [(None, 0), (0, 0), (1, 1), (2, 2), (130, 130)])
def test_the_status_is_kept_after_handlers_and_flushes(ends, code, status):
    ends = ends()
    with pytest.raises(Ended) as e:
        entry.end_process(code)
    assert e.value.code == status
    assert ends == ["exit handlers", "flush stdout", "flush stderr", f"_exit {status}"]


def test_a_live_thread_gets_the_normal_exit(ends):
    ends = ends()
    release = threading.Event()
    worker = threading.Thread(target=release.wait, name="still working")
    worker.start()
    try:
        with pytest.raises(SystemExit) as e:
            entry.end_process(3)
    finally:
        release.set()
        worker.join()
    assert e.value.code == 3 and ends == []  # Python waits for the thread, runs the handlers, tears down


def test_a_message_gets_the_normal_exit(ends):
    ends = ends()
    with pytest.raises(SystemExit) as e:
        entry.end_process("a message for stderr")
    assert e.value.code == "a message for stderr" and ends == []


def test_a_profiled_or_traced_process_gets_the_normal_exit(ends, monkeypatch):
    ends = ends()
    for hook in ("getprofile", "gettrace"):
        with monkeypatch.context() as m:
            m.setattr(sys, hook, lambda: print)  # something watches: its figures come after the command returns
            with pytest.raises(SystemExit) as e:
                entry.end_process(0)
        assert e.value.code == 0 and ends == []


def test_run_process_ends_with_mains_status(ends, monkeypatch):
    ends()
    monkeypatch.setattr(entry, "main", lambda argv: sys.exit(4))
    with pytest.raises(Ended) as e:
        entry.run_process([])
    assert e.value.code == 4


@pytest.mark.engine
def test_a_child_runs_its_exit_handlers_and_keeps_its_output():
    """In a real process: a handler registered before the command still runs, after the command's output."""
    script = ("import atexit, sys\n"
              "atexit.register(lambda: print('handler ran', flush=False))\n"
              "from inproc.cli.main import run_process\n"
              "run_process(sys.argv[1:])\n")
    done = run_child([sys.executable, "-c", script, "--version"], timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["inproc, version " + entry.__version__, "handler ran"]
    bad = run_child([sys.executable, "-c", script, "run", "no-such-profile.toml"], timeout=120)
    assert bad.returncode == 2 and "no-such-profile.toml" in bad.stderr
    assert bad.stdout.splitlines() == ["handler ran"]
