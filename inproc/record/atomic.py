"""The one atomic writer of result files, reports and cell files.

A temp file in the same folder, fsync, then ``os.replace``: a reader never sees half a file,
and a crash leaves the old file (or none) in place.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable


def write_atomic(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> int:
    """``write(f)`` into a temp file beside ``path``, fsync, ``os.replace``; the bytes written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; results and reports are ordinary files
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            size = f.tell()
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return size
