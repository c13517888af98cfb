"""What a bisect tries: commits of a git checkout, or the builds of a ``--builds`` list.

A target is prepared before each measurement and names the Python interpreter that
measures it:

- :class:`GitRevisions` — the checkout is moved to the commit (detached) and ``--build CMD``
  run in it; the interpreter is the bisect's own (the checkout is what it imports).
- :class:`BuildList` — each line of the file is a Python interpreter of its own
  environment, or a wheel, installed (without its dependencies) into a scratch environment
  that sees the interpreter's own packages.
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from inproc.bisect import git
from inproc.errors import UsageError


@dataclass(frozen=True)
class Prepared:
    """A target made ready: the interpreter to measure it with, or why it could not be built."""

    python: str | None
    failure: str = ""
    build_s: float = 0.0


def _tail(text: str) -> str:
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    return lines[-1][:300] if lines else ""


@dataclass
class GitRevisions:
    """The commits from good to bad of one checkout (``ids[0]`` good, ``ids[-1]`` bad)."""

    repo: Path
    ids: list[str]
    build: str | None = None

    def label(self, i: int) -> str:
        return git.short(self.repo, self.ids[i])

    def subject(self, i: int) -> str:
        return git.subject(self.repo, self.ids[i])

    def details(self, i: int) -> str:
        return git.diff_stat(self.repo, self.ids[i])

    def origin(self) -> dict | None:
        """Where the checkout is before the bisect moves it (the log keeps it; the end puts it back)."""
        p = git.place(self.repo)
        return {"sha": p.sha, "branch": p.branch}

    def restore(self, origin: dict | None) -> None:
        if origin:
            git.restore(self.repo, git.Place(origin["sha"], origin["branch"]))

    def prepare(self, i: int) -> Prepared:
        git.checkout(self.repo, self.ids[i])
        if not self.build:
            return Prepared(sys.executable)
        done = subprocess.run(self.build, shell=True, cwd=self.repo, capture_output=True, text=True)
        if done.returncode != 0:
            return Prepared(None, f"--build exited {done.returncode}: {_tail(done.stderr or done.stdout)}")
        return Prepared(sys.executable)


@dataclass
class BuildList:
    """The lines of a ``--builds`` file, oldest first: interpreters or wheels."""

    path: Path
    lines: list[str]
    scratch: Path

    @property
    def ids(self) -> list[str]:
        return self.lines

    def label(self, i: int) -> str:
        return f"#{i + 1} {Path(self.lines[i]).name if self.lines[i].endswith('.whl') else self.lines[i]}"

    def subject(self, i: int) -> str:
        return self.lines[i]

    def details(self, i: int) -> str:
        return f"line {i + 1} of {self.path}"

    def origin(self) -> dict | None:
        return None

    def restore(self, origin: dict | None) -> None:
        """Builds move no checkout: nothing to put back."""

    def prepare(self, i: int) -> Prepared:
        line = self.lines[i]
        if not line.endswith(".whl"):
            return Prepared(line)
        env = self.scratch / f"build-{i + 1}"
        python = env / "bin" / "python"
        if not python.exists():
            done = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                return Prepared(None, f"venv failed: {_tail(done.stderr)}")
        done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--force-reinstall", "--quiet", line],
                              capture_output=True, text=True)
        if done.returncode != 0:
            return Prepared(None, f"pip install {Path(line).name} exited {done.returncode}: {_tail(done.stderr)}")
        return Prepared(str(python))


def read_builds(path: str, scratch: Path) -> BuildList:
    """The ``--builds`` file: one interpreter or wheel a line, oldest first (# comments and blank lines skipped)."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--builds {path!r} is not a file. Give a list of interpreters or wheels, one a line, oldest first.")
    lines = [x.split("#", 1)[0].strip() for x in p.read_text().splitlines()]
    lines = [x for x in lines if x]
    if len(lines) < 2:
        raise UsageError(f"--builds {path!r} lists {len(lines)} build(s); give at least two (the good one first, the bad one last).")
    for n, line in enumerate(lines, 1):
        target = Path(line)
        if not target.is_file():
            raise UsageError(f"--builds {path!r} line {n}: {line!r} is not a file. Give a Python interpreter or a .whl.")
        if not line.endswith(".whl") and not target.stat().st_mode & 0o111:
            raise UsageError(f"--builds {path!r} line {n}: {line!r} is not executable. Give a Python interpreter or a .whl.")
    return BuildList(p, lines, scratch)
