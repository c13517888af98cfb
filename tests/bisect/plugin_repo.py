"""A git repository of a vLLM general plugin, committed revision by revision, for bisect's engine tests.

Each commit writes ``bisect_probe.py`` (:func:`tests.plugins.wrapping_module`): the body it
plants inside the model runner's ``execute_model`` is the revision's behaviour: a busy-wait
that doubles the step time (a slower kernel) or a raise (a revision that does not run).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests.plugins import register, wrapping_module

MODULE = "bisect_probe"
#: The planted slowdown: each call spins for half the time since the call before it (capped at
#: 0.25 s). Back to back, the period p between calls settles where spin = p / 2, that is where the
#: spin equals the step's own time: every decode step takes about twice as long, whatever the
#: machine's load makes a step cost (a fixed busy-wait is +100 % on an idle machine and +2 % on a
#: loaded one, where a step takes 50 times longer).
DOUBLING = """state = _before.__dict__
now = time.perf_counter()
last, state["last"] = state.get("last"), now
if last is not None:
    end = now + min(0.5 * (now - last), 0.25)
    while time.perf_counter() < end:
        pass"""
FAIL = "raise RuntimeError('planted failure: this revision does not run')"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_repo(root: Path, bodies: list[str]) -> tuple[Path, Path, list[str]]:
    """(repo, site, commit ids oldest first): one commit per body, the plugin registered under ``site``."""
    repo, site = root / "repo", root / "site"
    repo.mkdir(parents=True)
    register(site, MODULE)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "test@example.com")
    git(repo, "config", "user.name", "test")
    ids = []
    for n, body in enumerate(bodies):
        (repo / f"{MODULE}.py").write_text(f"# revision {n}\n" + wrapping_module(body))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"revision {n}")
        ids.append(git(repo, "rev-parse", "HEAD"))
    return repo, site, ids


def fast() -> str:
    return "pass"


def slow() -> str:
    return DOUBLING
