"""What the step watchdog does once a call has hung (``inproc.run.watchdog``): every thread's stacks
written out, the process's own children ended, and where the stacks file goes."""
from __future__ import annotations

import faulthandler
import sys
from pathlib import Path
from typing import Protocol

#: Children are asked to stop (SIGTERM) and killed after this long.
CHILD_GRACE_S = 5.0


class HasReason(Protocol):
    def reason(self) -> str: ...


def dump_stacks(path: str | None, hang: HasReason) -> None:
    """Every thread's Python stack to stderr and, when ``path`` is given, to that file."""
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    if path:
        try:
            with open(path, "w") as f:
                f.write(f"inproc step watchdog: {hang.reason()}\n")
                f.flush()
                faulthandler.dump_traceback(file=f, all_threads=True)
            print(f"inproc: step watchdog: stacks saved in {path}", file=sys.stderr, flush=True)
        except OSError as e:
            print(f"inproc: step watchdog: could not write {path}: {e}", file=sys.stderr, flush=True)


def end_own_children() -> None:
    """SIGTERM this process's own children (the engine's local ranks), then SIGKILL those still alive."""
    import psutil

    children = psutil.Process().children(recursive=True)
    for p in children:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(children, timeout=CHILD_GRACE_S)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass


def stacks_path_for(out_path: str | None) -> str | None:
    """``RESULTS.hang.txt`` beside the results file (None: no results file)."""
    return str(Path(out_path).with_suffix(".hang.txt")) if out_path else None
