"""Cell files stay inside their folder: a manifest row whose cell file leaves the results file's cell
folder is never opened, whatever command reads the file.

The cell decode-256x1 of a real run is moved to a folder the test owns beside the results folder
(``outside/``), whole and valid (the same run's ``created``), and the results file points at it:
by ``..``, by an absolute path, by symlinks (the cell file and its tables), by a symlinked folder
on the way. A reader that followed the path would load it as a good entry; each must instead make
it an Error entry named as outside the folder (report, ``inproc.open``, bisect's reader), or stop
with that one line where it needs the entry's raw records (``--rederive``, compare, baseline, merge,
``run --resume``; history passes the night over). The kernel watches ``outside/`` (inotify: any
open or read, from any library or process); nothing there is opened, and no byte on disk changes.

The commands run in this process (``tests.spawn.run_main``: none may build an engine); one
runs as a child too.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

import inproc
from inproc import types as st
from inproc.bisect.runs import read_outcome
from inproc.record.contain import OUTSIDE, CellFolder, OutsideFolder
from inproc.record.io import cells_dir, load_results, write_results
from tests import opened
from tests.conftest import DEFAULT_PROFILE, FIXTURES
from tests.spawn import run_inproc, run_main

pytestmark = pytest.mark.skipif(not opened.AVAILABLE, reason="no inotify here: opens cannot be watched")

RUNS = [FIXTURES / "compare" / f"run-{i}.json" for i in (1, 2, 3)]
CELL = "decode-256x1"
ESCAPES = ("..", "absolute", "symlinked file", "symlinked folder")


def _written(folder: Path, source: Path = RUNS[0]) -> Path:
    out = folder / "r.json"
    write_results(out, load_results(source))
    return out


def _point(results: Path, cell_file: str) -> None:
    """The manifest row of ``CELL`` names ``cell_file``."""
    data = json.loads(results.read_text())
    row = next(d for d in data["decode"] if d["cell_file"] == f"{CELL}.json.gz")
    row["cell_file"] = cell_file
    results.write_text(json.dumps(data))


def _escaping(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """(a results file whose cell ``CELL`` lies in ``outside/`` reached by ``kind``, that folder)."""
    results, outside = _written(tmp_path / "a"), tmp_path / "outside"
    outside.mkdir()
    cells = cells_dir(results)
    moved = sorted(p.name for p in cells.iterdir() if p.name.startswith(f"{CELL}."))
    assert len(moved) >= 4  # the cell file and its tables
    for name in moved:
        shutil.move(cells / name, outside / name)
    if kind == "..":
        _point(results, f"../../outside/{CELL}.json.gz")
    elif kind == "absolute":
        _point(results, str(outside / f"{CELL}.json.gz"))
    elif kind == "symlinked file":  # the manifest as written; each file of the cell a symlink out
        for name in moved:
            (cells / name).symlink_to(outside / name)
    else:
        (cells / "sub").symlink_to(outside, target_is_directory=True)
        _point(results, f"sub/{CELL}.json.gz")
    return results, outside


def _snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` (symlinks not followed): a file's bytes and mtime hashed, a link's target."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            if p.is_symlink():
                out[str(p)] = "-> " + os.readlink(p)
            elif p.is_file():
                out[str(p)] = f"{p.stat().st_mtime_ns} {hashlib.sha256(p.read_bytes()).hexdigest()}"
    return out


def _check_watch_sees(outside: Path, watch: opened.OpenWatch) -> None:
    """The watch would have seen a read: this test's own read of a file there is seen."""
    (outside / f"{CELL}.json.gz").read_bytes()
    assert f"{CELL}.json.gz" in watch.opened()


def _one_line(p, start: str) -> None:
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and p.stdout == "" and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert lines[0].startswith(f"Error: {start}"), lines[0]


def test_a_path_leaving_the_folder_is_outside_by_its_text_or_its_real_path(tmp_path):
    cells = tmp_path / "r.cells"
    (cells / "inner").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (cells / "out").symlink_to(tmp_path / "elsewhere")
    (cells / "in").symlink_to(cells / "inner")
    folder = CellFolder.at(cells)
    for inside in ("a.json.gz", "inner/a.json.gz", "inner/../a.json.gz", "in/a.json.gz", "in/../a.json.gz", "./a.json.gz"):
        assert folder.file(inside) == cells / inside
    for outside, why in (("../a.json.gz", "leaves r.cells/ by '..'"), ("inner/../../a.json.gz", "by '..'"),
                         ("/etc/passwd", "an absolute path"), (str(cells / "a.json.gz"), "an absolute path"),
                         ("out/a.json.gz", f"resolves to {tmp_path / 'elsewhere' / 'a.json.gz'} through a symlink"),
                         ("out/../a.json.gz", f"resolves to {tmp_path / 'a.json.gz'} through a symlink")):
        with pytest.raises(OutsideFolder, match=f"{OUTSIDE} \\(.*{why}"):
            folder.file(outside)
    for bad in ("..", "../x.cells", "/tmp"):  # the manifest's cell folder itself: a plain name beside it
        with pytest.raises(OutsideFolder, match="not a folder beside it"):
            CellFolder(tmp_path, bad).file("a.json.gz")
        assert CellFolder(tmp_path, bad).names() == []


@pytest.mark.parametrize("kind", ESCAPES)
def test_no_reading_command_opens_a_cell_file_outside_its_folder(tmp_path, capfd, kind):
    damaged, outside = _escaping(tmp_path, kind)
    good = _written(tmp_path / "b", RUNS[1])
    before = _snapshot(tmp_path)
    rows = json.loads(damaged.read_text())["decode"]
    row = next(d for d in rows if d["concurrency"] == 1 and d["context"] == 256)
    start = f"{cells_dir(damaged) / row['cell_file']}: {OUTSIDE}"
    with opened.OpenWatch(outside) as watch:
        rec, whole = load_results(damaged), load_results(RUNS[0])
        lost = next(e for e in rec.decode if e.key == "256x1")
        assert lost.status == st.ERROR and lost.trace is None and lost.error.startswith(OUTSIDE), lost.error
        assert f"the manifest recorded {row['status']}" in lost.reason and lost.figures.total_tok_s == row["total_tok_s"]
        assert [u.entry for u in rec.unreadable] == [CELL]
        for mine, theirs in zip(rec.decode, whole.decode):  # nothing measured elsewhere is lost
            if mine.key != "256x1":
                assert mine.figures == theirs.figures and mine.trace is not None

        p = run_main(capfd, "report", damaged)
        assert p.returncode == 0 and p.stderr == "" and OUTSIDE in p.stdout, p.stderr[-2000:]
        for args in (["report", damaged, "--rederive"], ["compare", good, damaged], ["compare", damaged, good],
                     ["baseline", good, damaged, "-o", tmp_path / "base.json"],
                     ["merge", damaged, good, "-o", tmp_path / "merged.json"],
                     ["run", DEFAULT_PROFILE, "--resume", damaged]):
            _one_line(run_main(capfd, *args), start)
        p = run_main(capfd, "history", damaged, good, RUNS[2])
        assert p.returncode == 0 and p.stderr.startswith(f"history: unreadable night {damaged}: {start}"), p.stderr
        assert "2 nights: r .. run-3" in p.stdout

        run = inproc.open(damaged)  # a notebook: an Error cell without tables, every other cell whole
        cell = run.cell(CELL)
        assert cell.status == st.ERROR and OUTSIDE in cell.error and cell.steps.num_rows == 0
        stepped = set(inproc.open(RUNS[0]).steps["cell"].to_pylist())
        assert CELL in stepped and set(run.steps["cell"].to_pylist()) == stepped - {CELL}
        figures = {r["concurrency"]: r for r in run.figures.to_pylist() if r["kind"] == "decode" and r["context"] == 256}
        assert figures[1]["status"] == st.ERROR and figures[1]["reason"].startswith(OUTSIDE)

        outcome = read_outcome(str(damaged), 256, 1)  # how bisect reads a child's results file
        assert outcome.status == st.ERROR and outcome.reason.startswith(OUTSIDE) and outcome.run is None
        assert watch.opened() == []
        _check_watch_sees(outside, watch)
    assert not (tmp_path / "base.json").exists() and not (tmp_path / "merged.json").exists()
    assert _snapshot(tmp_path) == before  # nothing written, nothing rewritten, no link followed to change


def test_an_unfinished_runs_symlinked_unlisted_cell_file_is_not_opened(tmp_path):
    """An unfinished run's cell files not yet in its manifest are found by listing the folder: a symlink out is named."""
    results, outside = _escaping(tmp_path, "symlinked file")
    data = json.loads(results.read_text())
    data["decode"] = [d for d in data["decode"] if d["cell_file"] != f"{CELL}.json.gz"]
    results.write_text(json.dumps({**data, "finished": False}))
    before = _snapshot(tmp_path)
    with opened.OpenWatch(outside) as watch:
        rec = load_results(results)
        lost = next(e for e in rec.decode if e.key == "256x1")
        assert lost.status == st.ERROR and lost.error.startswith(OUTSIDE) and "not yet in the manifest" in lost.reason
        assert watch.opened() == []
        _check_watch_sees(outside, watch)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("how", ["manifest names '../outside'", "cell folder a symlink out"])
def test_a_cell_folder_outside_the_results_files_folder_is_not_read(tmp_path, capfd, how):
    results, outside = _written(tmp_path / "a"), tmp_path / "outside"
    shutil.move(cells_dir(results), outside)
    if how.startswith("manifest"):
        results.write_text(json.dumps({**json.loads(results.read_text()), "cells": "../outside"}))
    else:
        cells_dir(results).symlink_to(outside, target_is_directory=True)
    before = _snapshot(tmp_path)
    with opened.OpenWatch(outside) as watch:
        rec = load_results(results)
        assert rec.decode and all(e.status == st.ERROR and e.error.startswith(OUTSIDE) for e in rec.prefill + rec.decode)
        p = run_main(capfd, "report", results)
        assert p.returncode == 0 and OUTSIDE in p.stdout
        assert all(c.status == st.ERROR and c.steps.num_rows == 0 for c in inproc.open(results).cells)
        assert watch.opened() == []
        _check_watch_sees(outside, watch)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("version", [7, 8])
def test_an_older_files_npz_cell_file_outside_its_folder_is_not_opened(tmp_path, version):
    """Schema 7-8 cell files (``.npz``, read by numpy) go through the same check."""
    results, outside = tmp_path / "a" / f"v{version}.json", tmp_path / "outside"
    shutil.copytree(FIXTURES / "schemas" / f"v{version}.cells", cells_dir(results))
    shutil.copyfile(FIXTURES / "schemas" / f"v{version}.json", results)
    outside.mkdir()
    shutil.move(cells_dir(results) / f"{CELL}.npz", outside / f"{CELL}.npz")
    manifest = json.loads(results.read_text())
    next(d for d in manifest["decode"] if d["cell_file"] == f"{CELL}.npz")["cell_file"] = f"../../outside/{CELL}.npz"
    results.write_text(json.dumps(manifest))
    before = _snapshot(tmp_path)
    with opened.OpenWatch(outside) as watch:
        rec = load_results(results)
        lost = next(e for e in rec.decode if e.key == "256x1")
        assert lost.status == st.ERROR and lost.error.startswith(OUTSIDE) and all(
            e.trace is not None for e in rec.decode if e.key != "256x1")
        cell = inproc.open(results).cell(CELL)
        assert cell.status == st.ERROR and cell.steps.num_rows == 0
        assert watch.opened() == []
        (outside / f"{CELL}.npz").read_bytes()
        assert f"{CELL}.npz" in watch.opened()
    assert _snapshot(tmp_path) == before


@pytest.mark.engine  # starts `python -m inproc`
def test_a_child_process_opens_no_cell_file_outside_its_folder(tmp_path):
    """The same check across a process boundary: the kernel sees a child's opens as well."""
    damaged, outside = _escaping(tmp_path, "symlinked folder")
    before = _snapshot(tmp_path)
    with opened.OpenWatch(outside) as watch:
        p = run_inproc("report", str(damaged), timeout=120)
        assert p.returncode == 0 and OUTSIDE in p.stdout, p.stderr[-2000:]
        assert watch.opened() == []
        _check_watch_sees(outside, watch)
    assert _snapshot(tmp_path) == before
