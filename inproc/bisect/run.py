"""A bisect from start to report: the log opened (or resumed), the sitting walked, the checkout put back.

The checkout is restored in a ``finally``, after a finished bisect, a bad input found on
the way, Ctrl-C, SIGTERM (turned into the same interrupt here) or a crash of a child; the
log keeps where it was (``origin``), so a bisect killed outright is put back by its
``--resume``.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from inproc.bisect.child import CellSpec
from inproc.bisect.log import LogWriter, check_same, read_log
from inproc.bisect.oracle import OracleSettings
from inproc.bisect.report import Result, render_html, render_markdown, result
from inproc.bisect.session import Measurer, Sitting
from inproc.bisect.walk import walk
from inproc.errors import UsageError
from inproc.record.io import write_text_atomic

LOG_NAME = "bisect.jsonl"


@contextmanager
def sigterm_interrupts():
    """SIGTERM raises KeyboardInterrupt in the main thread (so every ``finally`` runs), as Ctrl-C does."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def header(targets, spec: CellSpec, oracle: OracleSettings, build: str | None) -> dict:
    return {"cell": spec.key, "profile": spec.profile, "targets": list(targets.ids),
            "settings": {**asdict(oracle), "seed": spec.seed, "extra": list(spec.extra), "build": build or ""}}


def open_log(out: Path, head: dict, resume: bool, targets) -> tuple[LogWriter, object]:
    """The writer, and the log read back when resuming (None otherwise); the header written for a new log."""
    path = out / LOG_NAME
    if resume:
        log = read_log(path)
        check_same(log, head, path)
        return LogWriter(path), log
    if path.exists():
        raise UsageError(f"A bisect log is already at {str(path)!r}. Continue it with --resume, or give another --out.")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    writer = LogWriter(path)
    writer.header({**head, "origin": targets.origin()})
    return writer, None


def bisect(targets, spec: CellSpec, out: Path, oracle: OracleSettings, map_count: int, resume: bool,
           build: str | None, echo: Callable[[str], None], env: dict[str, str] | None = None,
           measurer: Measurer | None = None) -> Result:
    """Run (or resume) one cell's bisect; the reports are written to ``out`` (report.md, report.html).

    ``measurer`` measures a run in place of a child process (a simulated machine); None: ``inproc cell`` children."""
    writer, log = open_log(out, header(targets, spec, oracle, build), resume, targets)
    origin = log.header.get("origin") if log is not None else targets.origin()
    echo(f"bisect: cell {spec.key}, {len(targets.ids)} revisions, log in {out}")
    s = Sitting(targets, spec, out, oracle, writer, echo, env, measurer)
    if log is not None:
        s.resume(log)
    try:
        with sigterm_interrupts():
            walk(s, map_count)
    finally:
        targets.restore(origin)
    r = result(s)
    write_text_atomic(out / "report.md", render_markdown(r))
    write_text_atomic(out / "report.html", render_html(r))
    return r
