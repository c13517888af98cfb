"""What ``inproc selftest`` found: one :class:`Check` per capability, the build it ran on, a table and JSON."""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass

#: The JSON record's format; a results file names the record it attaches by this shape.
SELFTEST_FORMAT = 1


@dataclass(frozen=True)
class Check:
    """One capability of the adapter on this build: held or not, and why."""

    capability: str
    ok: bool | None  # None: not checked on this engine (the reason says why); neither passes nor fails
    reason: str


@dataclass(frozen=True)
class SelftestReport:
    """Every check of one selftest, and the engine build and machine it ran on."""

    engine: str  # the registry name
    label: str  # how people write it
    version: str
    commit: str
    device: str
    checks: tuple[Check, ...]
    elapsed_s: float  # from the first check to the last, builds included

    @property
    def passed(self) -> bool:
        return any(c.ok for c in self.checks) and all(c.ok is not False for c in self.checks)

    def summary(self) -> str:
        """One line: what passed, on which build (recorded with a run that attaches this selftest)."""
        failed = [c.capability for c in self.checks if c.ok is False]
        done = [c for c in self.checks if c.ok is not None]
        verdict = "passed" if self.passed else f"FAILED ({', '.join(failed) or 'nothing checked'})"
        return (f"selftest {verdict}: {len(done) - len(failed)}/{len(done)} checks on {self.label} "
                f"{self.version} (commit {self.commit}), {self.device}")

    def to_dict(self) -> dict:
        return {"format": SELFTEST_FORMAT, "passed": self.passed, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict) -> "SelftestReport":
        fields = {k: d[k] for k in ("engine", "label", "version", "commit", "device", "elapsed_s")}
        return cls(**fields, checks=tuple(Check(**c) for c in d["checks"]))


def table(report: SelftestReport) -> str:
    """Capability × ✓/✗ with the reason, under a header naming the build."""
    width = max(len(c.capability) for c in report.checks) if report.checks else 10
    lines = [f"{report.label} {report.version} · commit {report.commit} · {report.device}", ""]
    marks = {True: "✓", False: "✗", None: "–"}
    lines += [f"{c.capability:<{width}}  {marks[c.ok]}  {c.reason}" for c in report.checks]
    lines += ["", report.summary() + f" in {report.elapsed_s:.0f} s"]
    return "\n".join(lines)


def save(report: SelftestReport, path: str) -> None:
    """Write the JSON record atomically (temp file + rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".selftest-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(report.to_dict(), f, indent=1, ensure_ascii=False)
    os.replace(tmp, path)


def load(path: str) -> SelftestReport:
    """A saved record; a file that is not one is a one-line UsageError."""
    from inproc.errors import UsageError

    try:
        with open(path) as f:
            d = json.load(f)
        if not isinstance(d, dict) or d.get("format") != SELFTEST_FORMAT:
            raise ValueError("no selftest format field")
        return SelftestReport.from_dict(d)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{path} is not an `inproc selftest --out` record ({e}). Run `inproc selftest --out FILE`.") from None


def attach(record, report: SelftestReport, path: str):
    """``record`` with the selftest's one-line verdict in its notes (an OPTIONAL note: old files have none), saved to
    ``path``: its manifest alone (every cell file is written once, by the run)."""
    import dataclasses

    from inproc.record.io import write_manifest

    note = report.summary()
    if (record.engine.name, record.engine.version) != (report.engine, report.version):
        note += f"; this run's engine is {record.engine.name} {record.engine.version}, not the build the selftest checked"
    record = dataclasses.replace(record, notes=tuple(record.notes) + (note,))
    write_manifest(path, record)
    return record
