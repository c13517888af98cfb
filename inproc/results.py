"""The results file: versioned JSON, rewritten atomically after every cell.

Schema history (``schema_version``):
  1 — 2026-11-29: first format. Top level: schema_version, tool, created, command,
      finished, profile, plan, engine, capacity, machine, prefill[], decode[].
      Each entry carries its figures flat (reference column names) and its raw
      records under ``samples`` (prefill) or ``trace`` (decode).
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from inproc.errors import UsageError
from inproc.figures import DecodeFigures, PrefillFigures
from inproc.trace import CellTrace

SCHEMA_VERSION = 1


@dataclass
class PrefillEntry:
    """Cold prefill at one context."""

    context: int
    status: str
    reason: str = ""
    figures: PrefillFigures | None = None
    samples: list[CellTrace] = field(default_factory=list)
    checks_passed: tuple[str, ...] = ()
    error: str | None = None
    extra: dict = field(default_factory=dict)  # telemetry and later additions

    def to_dict(self) -> dict:
        f = asdict(self.figures) if self.figures else {}
        return {
            "context": self.context,
            "status": self.status,
            "reason": self.reason,
            "ttft_ms": f.get("ttft_ms"),
            "prompt_tok_s": f.get("prompt_tok_s"),
            "samples": f.get("samples", 0),
            "steps": f.get("steps"),
            "cached_tokens": f.get("cached_tokens"),
            "prefix_hits": f.get("prefix_hits"),
            "checks_passed": list(self.checks_passed),
            "error": self.error,
            "extra": self.extra,
            "raw": [s.to_dict() for s in self.samples],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "PrefillEntry":
        figs = None
        if d.get("ttft_ms") is not None or d.get("samples"):
            figs = PrefillFigures(d["ttft_ms"], d["prompt_tok_s"], d.get("steps"), d["samples"],
                                  d.get("cached_tokens") or 0, d.get("prefix_hits") or 0)
        return cls(d["context"], d["status"], d.get("reason", ""), figs,
                   [CellTrace.from_dict(s) for s in d.get("raw", [])], tuple(d.get("checks_passed", ())), d.get("error"),
                   d.get("extra", {}))


@dataclass
class DecodeEntry:
    """One sustained-decode cell."""

    context: int
    concurrency: int
    status: str
    reason: str = ""
    max_tokens: int = 0
    prompt_mode: str = "shared"
    figures: DecodeFigures | None = None
    trace: CellTrace | None = None
    capacity_check: dict | None = None
    checks_passed: tuple[str, ...] = ()
    error: str | None = None
    reproduce: str = ""
    extra: dict = field(default_factory=dict)  # telemetry and later additions

    @property
    def key(self) -> str:
        return f"{self.context}x{self.concurrency}"

    def to_dict(self) -> dict:
        d = {
            "context": self.context,
            "concurrency": self.concurrency,
            "status": self.status,
            "reason": self.reason,
            "max_tokens": self.max_tokens,
            "prompt_mode": self.prompt_mode,
            "ttft_kind": "cache-warm" if self.prompt_mode == "shared" else "cold",
        }
        d.update(self.figures.to_dict() if self.figures else {k: None for k in DecodeFigures.__dataclass_fields__})
        d.update(
            capacity_check=self.capacity_check,
            checks_passed=list(self.checks_passed),
            error=self.error,
            reproduce=self.reproduce,
            window_open_reason=self.trace.window_open_reason if self.trace else None,
            extra=self.extra,
            trace=self.trace.to_dict() if self.trace else None,
        )
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DecodeEntry":
        fields = DecodeFigures.__dataclass_fields__
        figs = DecodeFigures(**{k: d[k] for k in fields}) if d.get("total_tok_s") is not None else None
        return cls(d["context"], d["concurrency"], d["status"], d.get("reason", ""), d.get("max_tokens", 0),
                   d.get("prompt_mode", "shared"), figs, CellTrace.from_dict(d["trace"]) if d.get("trace") else None,
                   d.get("capacity_check"), tuple(d.get("checks_passed", ())), d.get("error"),
                   d.get("reproduce", ""), d.get("extra", {}))


@dataclass
class RunRecord:
    """Everything one ``inproc run`` (or ``inproc cell``) measured, plus what reproduces it."""

    tool: dict
    created: str
    command: str
    profile: dict
    plan: dict
    engine: dict
    capacity: dict
    machine: dict
    prefill: list[PrefillEntry] = field(default_factory=list)
    decode: list[DecodeEntry] = field(default_factory=list)
    finished: bool = False
    notes: list[str] = field(default_factory=list)  # engine rebuilds, interruptions

    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": self.tool,
            "created": self.created,
            "command": self.command,
            "finished": self.finished,
            "notes": self.notes,
            "profile": self.profile,
            "plan": self.plan,
            "engine": self.engine,
            "capacity": self.capacity,
            "machine": self.machine,
            "prefill": [e.to_dict() for e in self.prefill],
            "decode": [e.to_dict() for e in self.decode],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "RunRecord":
        return cls(d["tool"], d["created"], d["command"], d["profile"], d["plan"], d["engine"], d["capacity"],
                   d.get("machine", {}), [PrefillEntry.from_dict(e) for e in d.get("prefill", [])],
                   [DecodeEntry.from_dict(e) for e in d.get("decode", [])], d.get("finished", False),
                   list(d.get("notes", [])))


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Temp file in the same folder, fsync, then ``os.replace``: a reader never sees half a file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; results and reports are ordinary files
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, record: RunRecord) -> None:
    """Write a results file atomically (see :func:`write_text_atomic`)."""
    write_text_atomic(path, json.dumps(record.to_dict(), separators=(",", ":")))


def load_results(path: str | os.PathLike) -> RunRecord:
    """Read a results file; a missing, foreign or newer file is a one-line error."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"No results file at {str(path)!r}. Give the JSON written by 'inproc run --out'.")
    try:
        data = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"{p}: not a results file (invalid JSON: {e}).") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise UsageError(f"{p}: not an inproc results file (no schema_version). Give the JSON written by 'inproc run --out'.")
    version = data["schema_version"]
    if version != SCHEMA_VERSION:
        raise UsageError(f"{p}: schema_version {version!r} is not supported; this inproc reads version {SCHEMA_VERSION}.")
    try:
        return RunRecord.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # right version, wrong content
        raise UsageError(f"{p}: not a results file ({type(e).__name__}: {e}). "
                         "Give the JSON written by 'inproc run --out'.") from None
