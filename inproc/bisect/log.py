"""The bisect's log: JSON lines written as it goes, read back by ``--resume``.

Line kinds:

- ``header`` — once, first: the cell, the profile, the targets in order (good first, bad
  last), where the checkout was (``origin``), the settings.
- ``run`` — one child measurement: the target's index and id, the build, the child's exit
  code, the results file (kept: the measurement is its raw records), status, reason, tok/s.
- ``verdict`` — a target's final verdict, its note and its figure with the interval.

Each line is flushed and synced when written. A process killed mid-line leaves a last
line that does not parse: it is dropped on reading, nothing before it is.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inproc.errors import UsageError

LOG_VERSION = 1


@dataclass(frozen=True)
class RunLine:
    """One child run of one target."""

    index: int  # the target's position (0: good, last: bad)
    target: str  # its id (commit or build line)
    role: str  # "good", "bad" or "candidate"
    results: str  # the results file
    returncode: int
    status: str  # the cell's status, or "failed" when the child measured nothing
    reason: str
    tok_s: float | None
    build: str = ""  # the build's failure ("" built)
    wall_s: float = 0.0


@dataclass(frozen=True)
class VerdictLine:
    index: int
    target: str
    verdict: str
    note: str
    ratio: float | None = None  # tok/s ÷ the good revision's
    low: float | None = None
    high: float | None = None
    runs: int = 0


@dataclass
class Log:
    """What a log holds: its header, every run in order, the verdicts so far."""

    header: dict[str, Any]
    runs: list[RunLine] = field(default_factory=list)
    verdicts: dict[int, VerdictLine] = field(default_factory=dict)


def _append(path: Path, doc: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(doc, separators=(",", ":")) + "\n")
        f.flush()
        os.fsync(f.fileno())


class LogWriter:
    """Appends to the log at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def header(self, header: dict[str, Any]) -> None:
        _append(self.path, {"kind": "header", "version": LOG_VERSION, **header})

    def run(self, r: RunLine) -> None:
        _append(self.path, {"kind": "run", **asdict(r)})

    def verdict(self, v: VerdictLine) -> None:
        _append(self.path, {"kind": "verdict", **asdict(v)})


def parse_lines(lines: list[str], where: str) -> Log:
    """The log from its lines; a last line cut short is dropped, any other bad line is a one-line error."""
    docs = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            docs.append(json.loads(line))
        except ValueError:
            if n == len(lines):  # the write that a kill interrupted
                break
            raise UsageError(f"The bisect log {where} is damaged at line {n}. Start again with another --out.") from None
    if not docs or docs[0].get("kind") != "header":
        raise UsageError(f"The bisect log {where} has no header line. Start again with another --out.")
    if docs[0].get("version") != LOG_VERSION:
        raise UsageError(f"The bisect log {where} is version {docs[0].get('version')!r}; this inproc reads {LOG_VERSION}.")
    head = {k: v for k, v in docs[0].items() if k not in ("kind", "version")}
    log = Log(head)
    for d in docs[1:]:
        kind = d.pop("kind", None)
        if kind == "run":
            log.runs.append(RunLine(**d))
        elif kind == "verdict":
            v = VerdictLine(**d)
            log.verdicts[v.index] = v
    return log


def read_log(path: Path) -> Log:
    if not path.is_file():
        raise UsageError(f"Nothing to resume: no bisect log at {str(path)!r}. Run without --resume first.")
    return parse_lines(path.read_text(encoding="utf-8").splitlines(), str(path))


def check_same(log: Log, header: dict[str, Any], path: Path) -> None:
    """``--resume`` continues the same bisect: the same cell, profile, targets and settings."""
    for key in ("cell", "profile", "targets", "settings"):
        if log.header.get(key) != header.get(key):
            raise UsageError(f"--resume: the log {path} was made with another {key} "
                             f"({log.header.get(key)!r}, now {header.get(key)!r}). Resume with the same flags, "
                             "or give another --out.")
