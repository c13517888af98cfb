"""Bad input to ``inproc bisect``: one line, exit 2, the checkout where it was, nothing measured (no engine)."""
from __future__ import annotations

import json

import pytest

from inproc.bisect import git
from inproc.cli.main import main
from tests.bisect.plugin_repo import fast, make_repo, slow
from tests.conftest import DEFAULT_PROFILE


@pytest.fixture()
def plugin(tmp_path):
    repo, _, ids = make_repo(tmp_path, [fast(), fast(), slow()])
    return repo, ids


def bad_input(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as e:
        main(["bisect", str(DEFAULT_PROFILE), *args])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("args, words", [
    (["--cell", "256x2", "--good", "HEAD~2", "--bad", "nosuch"], "Unknown revision 'nosuch' for --bad"),
    (["--cell", "256x2", "--good", "main", "--bad", "HEAD~2"], "is not an ancestor"),
    (["--cell", "256q2", "--good", "HEAD~2", "--bad", "main"], "Bad --cell '256q2'"),
    (["--cell", "256x2", "--good", "HEAD~2"], "Give --repo DIR --good REV --bad REV"),
    (["--good", "HEAD~2", "--bad", "main"], "Give the cell one way"),
    (["--cell", "256x2", "--good", "HEAD~2", "--bad", "main", "--run-spread", "x"], "Bad --run-spread"),
    (["--cell", "256x2", "--good", "HEAD~2", "--bad", "main", "--resume"], "Nothing to resume"),
    (["--cell", "256x2", "--good", "HEAD~2", "--bad", "main", "--budget", "soon"], "Bad --budget 'soon'"),
])
def test_bad_input_leaves_the_checkout_alone(plugin, tmp_path, capsys, args, words):
    repo, _ = plugin
    before = git.place(repo)
    err = bad_input(capsys, "--repo", str(repo), "--out", str(tmp_path / "out"), *args)
    assert words in err
    assert git.place(repo) == before
    assert not (tmp_path / "out" / "bisect.jsonl").exists()


def test_a_dirty_checkout_and_a_folder_that_is_no_repository(plugin, tmp_path, capsys):
    repo, _ = plugin
    (repo / "bisect_probe.py").write_text("changed\n")
    before = git.place(repo)
    err = bad_input(capsys, "--cell", "256x2", "--repo", str(repo), "--good", "HEAD~2", "--bad", "main")
    assert "uncommitted changes (bisect_probe.py)" in err and git.place(repo) == before
    assert "is not a git repository" in bad_input(capsys, "--cell", "256x2", "--repo", str(tmp_path), "--good", "a",
                                                  "--bad", "b")


def test_a_log_already_there_needs_resume(plugin, tmp_path, capsys):
    repo, _ = plugin
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "bisect.jsonl").write_text("{}\n")
    err = bad_input(capsys, "--cell", "256x2", "--repo", str(repo), "--good", "HEAD~2", "--bad", "main", "--out",
                    str(tmp_path / "out"))
    assert "Continue it with --resume" in err


def test_builds_lists_are_checked_before_anything_runs(tmp_path, capsys):
    assert "is not a file" in bad_input(capsys, "--cell", "256x2", "--builds", str(tmp_path / "none.txt"))
    listing = tmp_path / "builds.txt"
    listing.write_text(f"{tmp_path / 'missing.whl'}\n{tmp_path / 'missing-too.whl'}\n")
    assert "line 1" in bad_input(capsys, "--cell", "256x2", "--builds", str(listing))
    listing.write_text("/bin/sh\n")
    assert "lists 1 build(s)" in bad_input(capsys, "--cell", "256x2", "--builds", str(listing))


def test_cells_from_an_alarm_file_that_is_not_one(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"kind": "something"}))
    assert "is not a comparison" in bad_input(capsys, "--from-compare", str(other), "--builds", "x")
    empty = tmp_path / "compare.json"
    empty.write_text(json.dumps({"kind": "inproc-compare", "rows": [], "regressions": []}))
    assert "flags no regressed cell" in bad_input(capsys, "--from-compare", str(empty), "--builds", "x")
