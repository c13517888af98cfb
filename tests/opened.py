"""Which files in a folder were opened or read, as the kernel saw it (inotify): by this process or
any other, through any library (Python's ``open``, pyarrow's C++ reader, numpy), through a symlink
or not. ``stat``, ``lstat`` and ``readlink`` are no opens and are not seen.

Linux only (ctypes to libc's ``inotify_*``); :data:`AVAILABLE` says whether it works here.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from pathlib import Path

IN_ACCESS, IN_OPEN = 0x00000001, 0x00000020
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name

try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    AVAILABLE = hasattr(_libc, "inotify_init1")
except OSError:
    AVAILABLE = False


class OpenWatch:
    """A context in which every open or read of ``folder`` itself or of a file directly in it is recorded."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._fd = -1
        self.seen: list[str] = []

    def __enter__(self) -> "OpenWatch":
        self._fd = _libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self._fd < 0 or _libc.inotify_add_watch(self._fd, os.fsencode(self.folder), IN_OPEN | IN_ACCESS) < 0:
            raise OSError(ctypes.get_errno(), f"inotify on {self.folder}")
        return self

    def opened(self) -> list[str]:
        """The names opened or read since the watch began (``.`` for the folder itself: it was listed)."""
        while True:
            try:
                buf = os.read(self._fd, 65536)
            except BlockingIOError:
                return list(self.seen)
            at = 0
            while at < len(buf):
                size = _EVENT.unpack_from(buf, at)[3]
                name = buf[at + _EVENT.size: at + _EVENT.size + size].rstrip(b"\0").decode()
                self.seen.append(name or ".")
                at += _EVENT.size + size

    def __exit__(self, *exc) -> None:
        os.close(self._fd)
