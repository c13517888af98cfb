"""A git repository of a vLLM general plugin, committed revision by revision, for bisect's engine tests.

Each commit writes ``bisect_probe.py`` (:func:`tests.plugins.wrapping_module`): the body it
plants inside the model runner's ``execute_model`` is the revision's behaviour: a sleep
(the step made several times slower) or a raise (a revision that does not run).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests.plugins import register, wrapping_module

MODULE = "bisect_probe"
#: The planted slowdown: every step waits this long inside ``execute_model``. A fixed wait, not a
#: share of the step: on this 2-core machine, shared with other jobs, one child's step time varies
#: 2-5x from the next one's (3 ms idle, 40-300 ms under load), so only a wait that is large against
#: the loaded step keeps the regression unmistakable: 150 ms makes a step ×3 or more up to 75 ms
#: steps (×50 idle). A sleep, so the wait does not take the CPU the forward needs.
SLOW_S = 0.15
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
    return f"time.sleep({SLOW_S!r})"
