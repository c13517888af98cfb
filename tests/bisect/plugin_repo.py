"""A git repository of a vLLM general plugin, committed revision by revision, for bisect's engine tests.

Each commit writes ``bisect_probe.py``, a plugin whose ``register()`` wraps the model
runner's ``execute_model`` (:func:`planted`): the revision's behaviour is a busy-wait
inside every step sized relative to the step it is planted in, or a raise (a revision that
does not run, :data:`FAIL`).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests.plugins import register, wrapping_module

MODULE = "bisect_probe"
#: The plant of the nine-commit bisect: the step made about three times as long (a wait of twice the forward).
SLOW_FRACTION = 2.0
FAIL = wrapping_module("raise RuntimeError('planted failure: this revision does not run')")
#: Forwards measured before the first wait, and how many recent ones the wait is sized from.
CLEAN_STEPS, RECENT_STEPS = 3, 9


def planted(fraction: float) -> str:
    """A plugin module that busy-waits ``fraction`` × the median of its recent clean forwards before every forward.

    The wait is sized from the model runner's own forward in this process (``execute_model``
    timed without the wait), so it costs the same share of a step on an idle machine and on
    a loaded one, where every step is several times longer. A busy-wait, as a slower kernel
    costs CPU time; the first ``CLEAN_STEPS`` forwards run without it, to be measured.
    """
    return f'''import time

FRACTION = {fraction!r}
_forward_s = []


def _wait():
    if not FRACTION or len(_forward_s) < {CLEAN_STEPS}:
        return
    recent = sorted(_forward_s[-{RECENT_STEPS}:])
    end = time.perf_counter() + FRACTION * recent[len(recent) // 2]
    while time.perf_counter() < end:
        pass


def register():
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    inner = GPUModelRunner.execute_model
    if getattr(inner, "_test_plugin", False):
        return

    def execute_model(self, *args, **kwargs):
        _wait()
        start = time.perf_counter()
        out = inner(self, *args, **kwargs)
        _forward_s.append(time.perf_counter() - start)
        return out

    execute_model._test_plugin = True
    GPUModelRunner.execute_model = execute_model
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_repo(root: Path, modules: list[str]) -> tuple[Path, Path, list[str]]:
    """(repo, site, commit ids oldest first): one commit per plugin module source, the plugin registered under ``site``."""
    repo, site = root / "repo", root / "site"
    repo.mkdir(parents=True)
    register(site, MODULE)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "test@example.com")
    git(repo, "config", "user.name", "test")
    ids = []
    for n, module in enumerate(modules):
        (repo / f"{MODULE}.py").write_text(f"# revision {n}\n" + module)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"revision {n}")
        ids.append(git(repo, "rev-parse", "HEAD"))
    return repo, site, ids


def fast() -> str:
    return planted(0.0)


def slow(fraction: float = SLOW_FRACTION) -> str:
    return planted(fraction)
