"""The git operations of a bisect: revisions resolved and ordered, a clean checkout moved and put back.

Every call is ``git -C DIR ...`` with its output captured; a git that refuses (an unknown
revision, not a repository) becomes a one-line :class:`~inproc.errors.UsageError`, checked
before the checkout is touched.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from inproc.errors import UsageError


class GitError(RuntimeError):
    """git failed where it should not (a checkout of a revision that resolved a moment ago)."""


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``git -C repo ARGS``, its output as text; raises :class:`GitError` on a non-zero exit when ``check``."""
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    except FileNotFoundError:
        raise UsageError("git is not installed (no 'git' on PATH); bisect needs it to move the checkout.") from None
    if check and done.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {(done.stderr or done.stdout).strip().splitlines()[-1:] or ['failed']}")
    return done


@dataclass(frozen=True)
class Place:
    """Where a checkout is: on a branch (``branch`` set) or detached at ``sha``."""

    sha: str
    branch: str | None

    def describe(self) -> str:
        return f"branch {self.branch} ({self.sha[:12]})" if self.branch else f"detached HEAD {self.sha[:12]}"


def repo_root(directory: str) -> Path:
    """The top folder of the git checkout ``directory``; a one-line error when it is none."""
    p = Path(directory)
    if not p.is_dir():
        raise UsageError(f"--repo {directory!r} is not a folder. Give the git checkout the engine is imported from.")
    done = git(p, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        raise UsageError(f"--repo {directory!r} is not a git repository. Give the git checkout the engine is "
                         "imported from (a source tree installed editable, or a plugin).")
    return Path(done.stdout.strip())


def resolve(repo: Path, rev: str, flag: str) -> str:
    """The full commit id of ``rev``; a one-line error naming the flag when git knows no such commit."""
    done = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise UsageError(f"Unknown revision {rev!r} for {flag} in {repo}. Give a commit, tag or branch "
                         "('git log --oneline' lists them).")
    return done.stdout.strip()


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    return git(repo, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def dirty(repo: Path) -> list[str]:
    """Tracked files with changes (staged or not); untracked files are left alone by a checkout."""
    out = git(repo, "status", "--porcelain", "--untracked-files=no").stdout
    return [line[3:] for line in out.splitlines() if line.strip()]


def place(repo: Path) -> Place:
    """Where the checkout is now."""
    sha = git(repo, "rev-parse", "HEAD").stdout.strip()
    branch = git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip()
    return Place(sha, branch or None)


def revisions(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after ``good`` up to ``bad`` (inclusive), oldest first, along the first parents."""
    out = git(repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{good}..{bad}").stdout
    return out.split()


def checkout(repo: Path, sha: str) -> None:
    """Move the checkout to ``sha``, detached."""
    git(repo, "checkout", "--quiet", "--detach", sha)


def restore(repo: Path, to: Place) -> None:
    """Put the checkout back where it was: its branch, or the detached commit."""
    if to.branch:
        git(repo, "checkout", "--quiet", to.branch)
    else:
        git(repo, "checkout", "--quiet", "--detach", to.sha)


def subject(repo: Path, sha: str) -> str:
    return git(repo, "show", "-s", "--format=%s", sha).stdout.strip()


def diff_stat(repo: Path, sha: str) -> str:
    """``git show --stat`` of the commit, without its message."""
    return git(repo, "show", "--stat", "--format=", sha).stdout.strip()


def short(repo: Path, sha: str) -> str:
    return git(repo, "rev-parse", "--short=10", sha).stdout.strip()


def check_range(repo: Path, good_rev: str, bad_rev: str) -> tuple[str, str]:
    """(good, bad) as commit ids, after every check a bisect needs before it moves the checkout."""
    good, bad = resolve(repo, good_rev, "--good"), resolve(repo, bad_rev, "--bad")
    if good == bad:
        raise UsageError(f"--good {good_rev!r} and --bad {bad_rev!r} are the same commit. Give an older good one.")
    if not is_ancestor(repo, good, bad):
        raise UsageError(f"--good {good_rev!r} is not an ancestor of --bad {bad_rev!r}: the good revision must come "
                         "before the bad one ('git log --oneline BAD' lists its ancestors).")
    changed = dirty(repo)
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        raise UsageError(f"The checkout {repo} has uncommitted changes ({', '.join(changed[:3])}{more}): commit or "
                         "stash them first; bisect moves the checkout between revisions.")
    return good, bad
