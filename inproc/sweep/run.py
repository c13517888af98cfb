"""The sweep's manager: one fresh child process per variant, ``sweep.json`` kept current.

Each child is ``python -m inproc run PROFILE ... --set KEY=VALUE --out DIR/NN-....json``,
an ordinary run whose record says how to repeat it. The child starts in its own session,
so a terminal's Ctrl-C reaches only this process, which passes one SIGINT on: the child
stops at its next step boundary and saves, as ``inproc run`` does; a second Ctrl-C kills
it. The child is killed if this process dies (Linux ``PR_SET_PDEATHSIG``), so a sweep
killed with SIGKILL leaves no engine behind. A variant that fails is recorded with its
one-line error and the sweep goes on.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Callable

import inproc
from inproc.errors import UsageError
from inproc.record.io import read_finished
from inproc.run.interrupt import RunInterrupted
from inproc.run.outcome import NOTHING_MEASURED_EXIT_CODE
from inproc.sweep.manifest import DONE, FAILED, INTERRUPTED, RUNNING, SETTLED, Sweep, VariantRun, write_sweep

Echo = Callable[[str], None]
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b")
MAX_ERROR_CHARS = 400
INTERRUPTED_RC = 130  # the CLI's exit status after Ctrl-C


class _StopFlag:
    """Ctrl-C as a request: the child gets one SIGINT; a second Ctrl-C raises KeyboardInterrupt."""

    def __init__(self) -> None:
        self.requested = False
        self.child: subprocess.Popen | None = None

    def handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGINT)


@contextlib.contextmanager
def forwarding_sigint():
    flag = _StopFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = signal.signal(signal.SIGINT, flag.handle)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


def _die_with_parent(parent: int) -> Callable[[], None]:
    def preexec() -> None:  # in the child, between fork and exec
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # not Linux: the child outlives a killed sweep
            return
        if os.getppid() != parent:  # the sweep died before the call above
            os._exit(1)

    return preexec


def child_env() -> dict[str, str]:
    """This environment, with this inproc first on the path: the child runs the same code."""
    root = str(Path(inproc.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([root, *([path] if path else [])]), "PYTHONUNBUFFERED": "1"}


def child_argv(sweep: Sweep, run: VariantRun, directory: Path, resume: bool) -> list[str]:
    """The ``inproc run`` command of one variant; ``resume`` continues its partial results file."""
    plan, results = sweep.plan, str(directory / run.variant.file)
    argv = [sys.executable, "-m", "inproc", "run", plan.profile, *plan.run_args, "--seed", str(plan.seed)]
    for item in run.variant.sets:
        argv += ["--set", item]
    argv += list(run.variant.flags)
    return argv + (["--resume", results] if resume else ["--out", results, "--force"])


def failure_line(returncode: int, tail: list[str]) -> str:
    """The child's one-line error: its CLI's ``Error: ...`` line, else how it ended and its last exception."""
    lines = [ln.strip() for ln in tail if ln.strip()]
    said = [ln for ln in lines if ln.startswith("Error: ")]
    if said:
        return said[-1].removeprefix("Error: ")[:MAX_ERROR_CHARS]
    if returncode < 0:
        how = f"killed by {signal.Signals(-returncode).name}"
    else:
        how = f"exited with status {returncode}"
    raised = [ln for ln in lines if _EXCEPTION.match(ln)]
    last = raised[-1] if raised else (lines[-1] if lines else "")
    return (f"{how}: {last}" if last else how)[:MAX_ERROR_CHARS]


def results_state(path: Path) -> str:
    """``finished``, ``partial`` (a file --resume can continue) or ``absent`` (none, or unreadable)."""
    if not path.is_file():
        return "absent"
    try:
        return "finished" if read_finished(path) else "partial"
    except UsageError:
        return "absent"


def _stream(proc: subprocess.Popen, log, echo: Echo, prefix: str) -> list[str]:
    tail: deque[str] = deque(maxlen=40)
    for line in proc.stdout:
        log.write(line)
        log.flush()
        tail.append(line)
        echo(prefix + line.rstrip("\n"))
    proc.wait()
    return list(tail)


def _start_state(run: VariantRun, results: Path) -> str:
    """How the variant's child starts: on a fresh file, or continuing one an earlier attempt left."""
    if run.attempts <= 1:  # a first attempt owns the name: a file there is from an earlier sweep (--force)
        for old in (results, results.with_suffix(".md")):
            old.unlink(missing_ok=True)
        return "absent"
    return results_state(results)


def run_variant(sweep: Sweep, run: VariantRun, directory: Path, stop: _StopFlag, echo: Echo) -> VariantRun:
    """Run one variant's child to its end; the variant as it ended (done, failed or interrupted)."""
    state = _start_state(run, directory / run.variant.file)
    if state == "finished":  # the sweep was killed after the child finished, before it noted so
        return dataclasses.replace(run, status=DONE, error="", returncode=0)
    argv = child_argv(sweep, run, directory, resume=state == "partial")
    t0 = time.perf_counter()
    with open(directory / run.variant.log, "a", encoding="utf-8") as log:
        log.write(f"--- attempt {run.attempts} at {run.started}: {' '.join(argv)}\n")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                env=child_env(), start_new_session=True, preexec_fn=_die_with_parent(os.getpid()))
        stop.child = proc
        try:
            tail = _stream(proc, log, echo, "    ")
        except BaseException:  # a second Ctrl-C, or anything else: no engine is left running
            proc.kill()
            proc.wait()
            raise
        finally:
            stop.child = None
    rc, wall = proc.returncode, round(time.perf_counter() - t0, 3)
    ended = dataclasses.replace(run, returncode=rc, wall_s=wall)
    # A variant whose every cell is Error still finished its file: its cells are the sweep's data.
    if rc in (0, NOTHING_MEASURED_EXIT_CODE) and results_state(directory / run.variant.file) == "finished":
        return dataclasses.replace(ended, status=DONE, error="")
    if rc == INTERRUPTED_RC or stop.requested:
        return dataclasses.replace(ended, status=INTERRUPTED, error="interrupted (Ctrl-C); --resume continues it")
    why = failure_line(rc, tail) if rc else f"finished without a complete results file {run.variant.file}"
    return dataclasses.replace(ended, status=FAILED, error=why)


class _Book:
    """The sweep as it stands, written to ``sweep.json`` at every change."""

    def __init__(self, sweep: Sweep, directory: Path, on_change: Callable[[Sweep], None]) -> None:
        self.sweep, self.directory, self.on_change = sweep, directory, on_change
        self.save()

    def save(self, run: VariantRun | None = None, **changes) -> None:
        if run is not None:
            self.sweep = self.sweep.replace_run(run)
        if changes:
            self.sweep = dataclasses.replace(self.sweep, **changes)
        write_sweep(self.directory, self.sweep)


def run_sweep(sweep: Sweep, directory: Path, echo: Echo, on_change: Callable[[Sweep], None] = lambda s: None) -> Sweep:
    """Run every variant that is not settled (done or failed), in order; the sweep as it ended.

    Ctrl-C: the variant in progress is stopped and saved, ``sweep.json`` says so, and
    :class:`RunInterrupted` is raised.
    """
    book = _Book(sweep, directory, on_change)
    count = len(sweep.runs)
    with forwarding_sigint() as stop:
        for run in sweep.runs:
            head = f"[{run.variant.index}/{count}] {run.variant.name}"
            if run.status in SETTLED:
                echo(f"{head}: {run.status} before, skipped")
                continue
            if stop.requested:
                break
            started = dataclasses.replace(run, status=RUNNING, error="", attempts=run.attempts + 1,
                                          started=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            book.save(started)
            echo(f"{head}: a fresh engine in a child process ...")
            try:
                ended = run_variant(book.sweep, started, directory, stop, echo)
            except KeyboardInterrupt:
                ended = dataclasses.replace(started, status=INTERRUPTED, error="interrupted (second Ctrl-C: killed)")
                stop.requested = True
            book.save(ended)
            on_change(book.sweep)
            echo(f"{head}: {ended.status}" + (f": {ended.error}" if ended.error else
                                              f" in {ended.wall_s:.1f} s" if ended.wall_s is not None else ""))
    if stop.requested:
        book.save(notes=book.sweep.notes + ("interrupted (Ctrl-C); --resume continues it",))
        on_change(book.sweep)
        raise RunInterrupted(f"interrupted; {directory / 'sweep.json'} lists what is done. Continue with --resume.")
    book.save(finished=True)
    on_change(book.sweep)
    return book.sweep
