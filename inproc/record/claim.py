"""One writer per results file, and the clean-up of what a killed writer left.

A writer of a results file (``inproc run``, ``cell``, ``merge``; ``inproc.record.write.ResultsWriter``)
first claims the path: an exclusive ``flock`` on the empty file ``.RESULTS.json.lock`` beside it,
held until the writer closes or its process ends (the kernel drops it on any exit, SIGKILL
included). A second process that tries to write the same path while the claim is held is
refused with one line; readers (report, compare, history, ...) take no claim and write nothing.

Only a new claim cleans, and only what belongs to that path: the temp files
(``.RESULTS.json.*.tmp`` and every ``.*.tmp`` in ``RESULTS.cells/``) and the cell folders a
``--force`` moved aside (``.RESULTS.cells.old-*``). No live writer can be using them, since a
writer holds the claim for as long as it writes. Cleaning on a timer or by age instead could
remove the temp file another run is filling. The lock file stays: removing it would let two
writers lock two different files of one name.

Within one process a path is claimed once; a second writer there shares the claim (one
run's writers, its watchdog's thread included, never race each other for the lock).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import threading
from pathlib import Path

from inproc.errors import UsageError
from inproc.record.atomic import fsync_dir, temp_pattern

_held: dict[str, tuple[int, int]] = {}  # resolved lock path -> (fd, writers sharing it) in this process
_lock = threading.Lock()


def lock_path(results: Path) -> Path:
    return results.with_name(f".{results.name}.lock")


def set_aside_pattern(cells: Path) -> str:
    """The glob of cell folders moved aside by :func:`clear_cells` (``.RESULTS.cells.old-*``)."""
    return f".{cells.name}.old-*"


class Claim:
    """This process's claim on a results file's path (see the module docstring); :meth:`release` when done."""

    def __init__(self, results: Path, cells: Path) -> None:
        self.key, self.released = str(lock_path(results).resolve()), False
        with _lock:
            fd, count = _held.get(self.key, (-1, 0))
            if count == 0:
                fd = _take(lock_path(results), results)
                _clean(results, cells)
            _held[self.key] = (fd, count + 1)

    def release(self) -> None:
        with _lock:
            if self.released:
                return
            self.released = True
            fd, count = _held.pop(self.key)
            if count > 1:
                _held[self.key] = (fd, count - 1)
            else:
                os.close(fd)  # closing the file drops its flock


def _take(lock: Path, results: Path) -> int:
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(f"Results file {str(results)!r} is being written by another inproc process (it holds "
                         f"{lock.name}). Wait for it to end, or give another --out.") from None
    return fd


def _clean(results: Path, cells: Path) -> None:
    """Remove what a killed writer of ``results`` left: temp files and moved-aside cell folders."""
    leftovers = list(results.parent.glob(temp_pattern(results.name)))
    leftovers += list(cells.glob(".*.tmp")) if cells.is_dir() else []
    for p in leftovers:
        p.unlink(missing_ok=True)
    for folder in results.parent.glob(set_aside_pattern(cells)):
        shutil.rmtree(folder, ignore_errors=True)


def clear_cells(cells: Path) -> None:
    """Remove an old cell folder before a new run writes its first cell there: renamed aside at once
    (one atomic step: no reader ever sees a mix of old and new cells), then deleted."""
    if not cells.exists():
        return
    aside = cells.with_name(f".{cells.name}.old-{os.getpid()}-{threading.get_ident()}")
    os.replace(cells, aside)
    fsync_dir(cells.parent)
    shutil.rmtree(aside, ignore_errors=True)  # what a crash leaves here, the next claim removes
