"""One measurement: ``python -m inproc cell ...`` in a fresh child process, its results file read back.

A fresh child per measurement gives each revision a clean engine and clean imports: the
child imports whatever the checkout (or the build's environment) holds now. Its output
goes to a log file beside its results file; the last lines name the failure when it
measured nothing.
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from inproc.bisect.runs import Outcome, read_outcome


@dataclass(frozen=True)
class CellSpec:
    """The cell a bisect measures and how: one ``inproc cell`` command line, less its results file."""

    profile: str  # absolute path
    context: int
    concurrency: int
    seed: int = 0
    extra: tuple[str, ...] = ()  # --duration, --window-steps, --set ... as given

    @property
    def key(self) -> str:
        return f"{self.context}x{self.concurrency}"

    def argv(self, python: str, out: Path) -> list[str]:
        return [python, "-m", "inproc", "cell", self.profile, "--context", str(self.context), "--concurrency",
                str(self.concurrency), "--seed", str(self.seed), "--no-loop-check", "--out", str(out), "--force",
                *self.extra]


@dataclass(frozen=True)
class Measured:
    outcome: Outcome
    returncode: int
    wall_s: float


def _tail(log: Path, lines: int = 200) -> str:
    """The child's last meaningful line: a Python error, an 'Error:' line, or the last line."""
    try:
        text = log.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    text = [x.strip() for x in text if x.strip()]
    for x in reversed(text):
        if x.startswith("Error:") or "Error: " in x or "Exception" in x:
            return x[:300]
    return text[-1][:300] if text else ""


def measure(spec: CellSpec, python: str, out: Path, env: dict[str, str] | None = None,
            timeout_s: float | None = None) -> Measured:
    """Run the child to its end and read the cell from its results file (``out``; its log: ``out`` + .log)."""
    log = out.with_suffix(".log")
    start = time.perf_counter()
    try:
        with open(log, "w") as f:
            done = subprocess.run(spec.argv(python, out), stdout=f, stderr=subprocess.STDOUT, env=env,
                                  timeout=timeout_s)
        rc = done.returncode
    except FileNotFoundError:
        return Measured(Outcome("failed", f"no interpreter {python!r}"), -1, 0.0)
    except subprocess.TimeoutExpired:
        return Measured(Outcome("failed", f"the child ran past {timeout_s:g} s"), -1, time.perf_counter() - start)
    wall = time.perf_counter() - start
    if not out.exists():
        return Measured(Outcome("failed", f"exit {rc}: {_tail(log)}"), rc, wall)
    outcome = read_outcome(str(out), spec.context, spec.concurrency)
    if outcome.run is None and rc not in (0, 4):
        outcome = Outcome("failed", f"exit {rc}: {_tail(log)}")
    return Measured(outcome, rc, wall)
