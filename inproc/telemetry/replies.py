"""The sampler process's answers, as the engine's process reads them (``inproc.telemetry.gpu_sampler``).

The sampler (``inproc.telemetry.gpu_process``) answers on its stdout pipe, one line per answer: a
JSON object when it is ready and at a cell's stop, ``started`` at a cell's start. The pipe is read
with ``os.read`` into one buffer, and every line is taken from that buffer: a buffered file's
``readline`` after ``select`` reads whatever is pending, hands back the first line and keeps the
next where ``select`` cannot see it, so an answer already sent would be missed and a live sampler
called exited. A line that is no answer (a library printing to stdout, a garbled line) is kept for
a note, never raised.
"""
from __future__ import annotations

import json
import os
import select
import time
from typing import Any

#: The sampler's answer to ``start``.
STARTED = "started"
#: Bytes taken from the pipe per read (an answer is a few hundred bytes; a stop's status a few KB per GPU).
_CHUNK = 1 << 16
#: How much of a line that is no answer a note quotes.
_QUOTED = 120


class Replies:
    """The lines of the pipe ``fd``, from one buffer; ``stray``: the lines read that were no answer."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._eof = False
        self.stray: list[str] = []

    @property
    def ended(self) -> bool:
        """The writer closed the pipe (it exited) and every line it wrote has been taken."""
        return self._eof and not self._buffer

    def line(self, deadline: float) -> str | None:
        """The next line, stripped; None at the end of the pipe, or when ``deadline`` (``time.monotonic``) passes
        with no whole line. A last line the writer left without its end is a line too."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0 or (self._eof and self._buffer):
                end = len(self._buffer) if end < 0 else end
                text = bytes(self._buffer[:end]).decode(errors="replace").strip()
                del self._buffer[:end + 1]
                return text
            if self._eof:
                return None
            ready, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(self._fd, _CHUNK)
            self._eof = not chunk
            self._buffer += chunk

    def answer(self, timeout_s: float, want: str) -> str | dict[str, Any] | None:
        """The next answer within ``timeout_s``: the line ``started`` (``want`` is :data:`STARTED`) or a JSON
        object holding the key ``want``; None when the sampler ends or stays silent.

        The other kind of answer is a late one to an earlier command: skipped. A line that is no answer is
        kept in :attr:`stray`; where an object is wanted, one that does not parse as one holding ``want`` is
        the answer gone wrong: kept, and None at once."""
        deadline = time.monotonic() + timeout_s
        while (text := self.line(deadline)) is not None:
            if text == STARTED:
                if want == STARTED:
                    return text
                continue
            doc = _object(text)
            if doc is not None and want == STARTED:
                continue
            if doc is not None and want in doc:
                return doc
            if text:
                self.stray.append(text)
            if want != STARTED and text.startswith("{"):
                return None
        return None

    def stray_note(self) -> str:
        """The lines that were no answer since the last call, in words ("" when none); they are then forgotten."""
        if not self.stray:
            return ""
        n, first = len(self.stray), self.stray[0]
        self.stray = []
        quoted = repr(first[:_QUOTED] + ("..." if len(first) > _QUOTED else ""))
        return f"sampler wrote {n} line{'s' if n > 1 else ''} that {'are' if n > 1 else 'is'} no answer (first: {quoted})"


def _object(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` holds, or None (not JSON, or JSON of another kind)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None
