"""The one atomic writer of result files, reports and cell files.

A temp file in the same folder (``.NAME.XXXXXXXX.tmp``), fsync, ``os.replace``, then fsync of
the folder: a reader never sees half a file, a crash leaves the old file (or none) in place,
and once this returns the new name survives a power cut too (the rename is an entry of the
folder, made durable by the folder's own fsync). The temp file is created with mode 0666 and
the kernel applies the process's umask, as for any file Python opens; nothing here reads or
sets the umask (setting it is process-wide, and the step watchdog's thread may write).

A killed writer can leave its temp file behind; :mod:`inproc.record.claim` removes them when
the next run claims the path.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import BinaryIO, Callable


def temp_pattern(name: str) -> str:
    """The glob of the temp files :func:`write_atomic` makes for the file ``name``."""
    return f".{name}.*.tmp"


def write_atomic(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> int:
    """``write(f)`` into a temp file beside ``path``, fsync, ``os.replace``, fsync the folder; the bytes written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_temp(p)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            size = f.tell()
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(p.parent)
    return size


def _new_temp(p: Path) -> tuple[int, Path]:
    """A new, empty temp file beside ``p``, opened for writing (mode 0666 less the umask, as ``open`` makes)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = p.with_name(f".{p.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # 2**32 names: another writer's, try the next
            continue


def fsync_dir(folder: str | os.PathLike) -> None:
    """Make the renames and removals in ``folder`` durable (a no-op where a folder cannot be fsynced)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # a filesystem that refuses fsync on a folder: the rename stands as the OS keeps it
        pass
    finally:
        os.close(fd)
