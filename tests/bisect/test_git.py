"""Bisect's git operations on a temporary repository (no engine): revisions, order, checks, checkout and back."""
from __future__ import annotations

import pytest

from inproc.bisect import git
from inproc.errors import UsageError
from tests.bisect.plugin_repo import git as run_git


@pytest.fixture()
def repo(tmp_path):
    r = tmp_path / "r"
    r.mkdir()
    run_git(r, "init", "-q", "-b", "main")
    run_git(r, "config", "user.email", "t@example.com")
    run_git(r, "config", "user.name", "t")
    ids = []
    for n in range(5):
        (r / "f.txt").write_text(f"{n}\n")
        run_git(r, "add", "-A")
        run_git(r, "commit", "-q", "-m", f"commit {n}")
        ids.append(run_git(r, "rev-parse", "HEAD"))
    return r, ids


def test_range_is_oldest_first_and_ends_at_bad(repo):
    r, ids = repo
    good, bad = git.check_range(r, "HEAD~4", "main")
    assert (good, bad) == (ids[0], ids[4])
    assert git.revisions(r, good, bad) == ids[1:]
    assert git.subject(r, ids[2]) == "commit 2"
    assert "f.txt" in git.diff_stat(r, ids[2])


def test_checkout_and_restore_a_branch_and_a_detached_head(repo):
    r, ids = repo
    before = git.place(r)
    assert before == git.Place(ids[4], "main")
    git.checkout(r, ids[1])
    assert git.place(r) == git.Place(ids[1], None)
    git.restore(r, before)
    assert git.place(r) == before
    git.checkout(r, ids[3])
    detached = git.place(r)
    git.checkout(r, ids[0])
    git.restore(r, detached)
    assert git.place(r) == git.Place(ids[3], None)


@pytest.mark.parametrize("good, bad, words", [
    ("nosuch", "main", "Unknown revision 'nosuch' for --good"),
    ("HEAD~4", "v9", "Unknown revision 'v9' for --bad"),
    ("main", "HEAD~4", "is not an ancestor"),
    ("main", "main", "the same commit"),
])
def test_bad_ranges_are_one_line_errors(repo, good, bad, words):
    r, _ = repo
    with pytest.raises(UsageError, match=words) as e:
        git.check_range(r, good, bad)
    assert "\n" not in str(e.value)


def test_a_dirty_checkout_is_refused_and_untracked_files_are_not_dirt(repo):
    r, _ = repo
    (r / "new.txt").write_text("untracked\n")
    git.check_range(r, "HEAD~2", "main")
    (r / "f.txt").write_text("changed\n")
    with pytest.raises(UsageError, match=r"uncommitted changes \(f.txt\)"):
        git.check_range(r, "HEAD~2", "main")


def test_not_a_repository(tmp_path):
    with pytest.raises(UsageError, match="is not a git repository"):
        git.repo_root(str(tmp_path))
    with pytest.raises(UsageError, match="is not a folder"):
        git.repo_root(str(tmp_path / "nothing"))
