"""``inproc bisect`` on the real engine: a plugin repository of nine commits, the regression from commit 6.

The commits (``tests/bisect/plugin_repo.py``): 0-1 fast, 2 slow (a bump that commit 3
undoes), 3 fast, 4 raises inside ``execute_model`` (a revision that does not run), 5 fast,
6-8 slow (the regression the bad revision carries). One bisect is killed after its first
measurements, resumed to its end, then resumed again with ``--map 3``: every check of the
search on one set of children, each measured once.
"""
from __future__ import annotations

import json
import signal
import sys
import time

import pytest

from inproc.bisect import git
from tests.bisect.plugin_repo import FAIL, MODULE, fast, make_repo, slow
from tests.conftest import DEFAULT_PROFILE, needs_vllm
from tests.plugins import plugin_env, register, wrapping_module
from tests.spawn import run_inproc, start_inproc

pytestmark = [pytest.mark.engine, needs_vllm]

LAYOUT = [fast(), fast(), slow(), fast(), FAIL, fast(), slow(), slow(), slow()]
CELL = ("--cell", "256x2", "--window-steps", "16", "--max-pairs", "5")


def runs(log) -> list[dict]:
    return [d for d in map(json.loads, log.read_text().splitlines()) if d["kind"] == "run"]


def verdicts(log) -> dict[int, dict]:
    return {d["index"]: d for d in map(json.loads, log.read_text().splitlines()) if d["kind"] == "verdict"}


def wait_for_runs(log, count: int, proc, timeout_s: float = 600) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and proc.poll() is None:
        if log.exists() and len(runs(log)) >= count:
            return
        time.sleep(0.5)
    pytest.fail(f"the bisect logged {len(runs(log)) if log.exists() else 0} runs, not {count}")


def test_bisect_killed_resumed_then_mapped(tmp_path):
    repo, site, ids = make_repo(tmp_path, LAYOUT)
    env = plugin_env(site, repo)
    out, log = tmp_path / "out", tmp_path / "out" / "bisect.jsonl"
    args = ("bisect", DEFAULT_PROFILE, *CELL, "--repo", repo, "--good", "HEAD~8", "--bad", "main", "--out", out)
    before = git.place(repo)
    started = time.monotonic()

    proc = start_inproc(*args, env=env)  # killed once it has measured bad, good and tried commit 4
    wait_for_runs(log, 3, proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 130
    assert git.place(repo) == before
    killed = log.read_text().splitlines()

    done = run_inproc(*args, "--resume", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert git.place(repo) == before
    assert log.read_text().splitlines()[: len(killed)] == killed  # kept, nothing measured again
    measured = [(r["index"], r["role"]) for r in runs(log)]
    assert measured.count((8, "bad")) == 1 and measured.count((4, "candidate")) == 1
    v = verdicts(log)
    assert v[4]["verdict"] == "skipped" and "planted failure" in v[4]["note"]
    assert v[6]["verdict"] == "bad" and v[5]["verdict"] == "good"
    assert v[8]["ratio"] < 0.8  # the regression as measured: tok/s well below good's
    assert f"First bad revision: {ids[6][:10]} revision 6" in done.stdout
    report = (out / "report.md").read_text()
    assert "bisect_probe.py" in report and "forward time" in report
    assert (out / "report.html").read_text().startswith("<!doctype html>")
    children = len([r for r in runs(log) if r["results"]])
    print(f"\nbisect of 9 commits: {children} children, {time.monotonic() - started:.0f} s wall "
          f"(one child lost to the kill and measured again), "
          f"{sum(r['wall_s'] for r in runs(log)):.0f} s in children")

    n_before = len(runs(log))
    mapped = run_inproc(*args, "--resume", "--map", "3", env=env)
    assert mapped.returncode == 0, mapped.stderr[-3000:]
    assert git.place(repo) == before
    new = [(r["index"], r["role"]) for r in runs(log)[n_before:]]
    assert {i for i, _ in new} == {2, 0}  # only the map's new point (and good runs beside it)
    v = verdicts(log)
    assert v[2]["verdict"] == "bad" and v[3]["verdict"] == "good"
    report = (out / "report.md").read_text()
    assert "not monotonic" in report and f"First bad revision: {ids[6][:10]}" in report


def test_an_over_capacity_cell_is_bad_input(tmp_path):
    repo, site, _ = make_repo(tmp_path, [fast(), slow()])
    before = git.place(repo)
    done = run_inproc("bisect", DEFAULT_PROFILE, "--cell", "4Kx8", "--repo", repo, "--good", "HEAD~1", "--bad", "main",
                      "--out", tmp_path / "out", env=plugin_env(site, repo))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Over capacity" in done.stderr.strip().splitlines()[-1]
    assert git.place(repo) == before


def interpreter(folder, body: str) -> str:
    """A Python interpreter of its own: a script that runs this test's Python with ``folder``'s plugin module."""
    folder.mkdir(parents=True)
    (folder / f"{MODULE}.py").write_text(wrapping_module(body))
    script = folder / "python"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{folder}" exec {sys.executable} "$@"\n')
    script.chmod(0o755)
    return str(script)


def test_builds_of_interpreters_find_the_slow_one(tmp_path):
    site = tmp_path / "site"
    register(site, MODULE)
    listing = tmp_path / "builds.txt"
    listing.write_text(f"{interpreter(tmp_path / 'b1', fast())}\n{interpreter(tmp_path / 'b2', slow())}\n")
    done = run_inproc("bisect", DEFAULT_PROFILE, *CELL, "--builds", listing, "--out", tmp_path / "out",
                      env=plugin_env(site, tmp_path / "site"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "First bad revision: #2" in done.stdout
