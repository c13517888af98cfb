"""Nothing lost to a damaged results folder, and nothing changed by reading one.

The damage is what an interrupted copy, a disk or a crash leaves: a cell file cut short, empty,
replaced by something else, changed inside, missing, or written by another run; a manifest
that is garbage or cut short; temp files of a killed writer. A damaged cell file makes that
entry an Error entry (its manifest row stands in for it) and every other entry loads; a
command that needs the entry's raw records stops with one line naming the file (exit 2); a
history passes the night over. No reading command changes a byte of the folder.

The commands run in this process (``inproc.cli.main.main``), as ``python -m inproc`` runs them.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from inproc import types as st
from inproc.cli.main import main
from inproc.compare.samples import SubWindowing
from inproc.errors import UsageError
from inproc.history.build import build_history
from inproc.history.nights import Unreadable, read_nights, read_nights_checked
from inproc.record.baseline import load_runs
from inproc.record.io import cells_dir, load_results, write_results
from inproc.record.summary import write_summary
from tests.conftest import FIXTURES

RUNS = [FIXTURES / "compare" / f"run-{i}.json" for i in (1, 2, 3)]
CELL = "decode-256x1"


def _written(tmp_path: Path, source: Path = RUNS[0], name: str = "r.json") -> Path:
    out = tmp_path / name
    write_results(out, load_results(source))
    return out


def _cell(results: Path, entry: str = CELL) -> Path:
    return cells_dir(results) / f"{entry}.json.gz"


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _garble(p: Path) -> None:
    b = bytearray(p.read_bytes())
    middle = len(b) // 2
    b[middle:middle + 32] = bytes(32)  # same size, compressed bytes changed
    p.write_bytes(bytes(b))


def _another_runs(p: Path) -> None:
    """The same cell of another run (run-2: another ``created``) in its place."""
    other = _written(p.parent.parent / "other", RUNS[1])
    shutil.copyfile(_cell(other), p)


DAMAGE = {
    "truncated": (_truncate, "truncated cell file"),
    "empty": (lambda p: p.write_bytes(b""), "empty cell file"),
    "foreign": (lambda p: p.write_text("not a cell\n"), "not a cell file (not gzip-compressed JSON)"),
    # Gzip JSON, but not a cell file's: wrong code let the reader take it as one, and a KeyError or an
    # AttributeError made the whole results file "not a results file".
    "a JSON object": (lambda p: p.write_bytes(gzip.compress(b"{}")),
                      "not a cell file (gzip JSON without a cell file's created, entry, kind, traces, telemetry, "
                      "tables, ns)"),
    "a JSON list": (lambda p: p.write_bytes(gzip.compress(b"[1, 2]")),
                    "not a cell file (gzip JSON holding a list, not an object)"),
    "garbled": (_garble, "damaged cell file"),
    "missing": (Path.unlink, "missing cell file"),
    "another run's": (_another_runs, "cell file of another run"),
}


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


def _inproc(capsys, *args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``inproc ARGS`` run in this process."""
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def _one_line(code: int, out: str, err: str, start: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, (code, err[-2000:])
    assert lines[0].startswith(f"Error: {start}"), lines[0]


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_cell_file_is_an_error_entry_and_the_rest_loads(tmp_path, kind):
    out = _written(tmp_path / "a")
    damage, what = DAMAGE[kind]
    damage(_cell(out))
    before = _snapshot(tmp_path)
    good, rec = load_results(RUNS[0]), load_results(out)
    assert [e.key for e in rec.decode] == [e.key for e in good.decode]
    for mine, theirs in zip(rec.decode, good.decode):
        if mine.key != "256x1":  # every other entry is whole: raw records and figures
            assert mine.status == theirs.status and mine.figures == theirs.figures and mine.trace is not None
    lost = next(e for e in rec.decode if e.key == "256x1")
    row = next(d for d in json.loads(out.read_text())["decode"] if d["cell_file"] == f"{CELL}.json.gz")
    assert lost.status == st.ERROR and lost.trace is None
    assert lost.error.startswith(f"cell file r.cells/{CELL}.json.gz unreadable: {what}"), lost.error
    assert f"the manifest recorded {row['status']}; {row['total_tok_s']:.1f} tok/s" in lost.reason
    assert lost.figures.total_tok_s == row["total_tok_s"]  # the manifest's headline figures are kept
    assert [u.entry for u in rec.unreadable] == [CELL] and rec.unreadable[0].reason.startswith(f"{_cell(out)}: {what}")
    with pytest.raises(UsageError, match="^" + re.escape(f"{_cell(out)}: {what}")) as e:
        load_results(out, rederive=True)
    assert "\n" not in str(e.value)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("kind", ["truncated", "missing", "another run's"])
def test_every_command_gives_one_line_or_the_error_entry_and_changes_nothing(tmp_path, capsys, kind):
    damaged, good = _written(tmp_path / "a", RUNS[0]), _written(tmp_path / "b", RUNS[1])
    damage, what = DAMAGE[kind]
    damage(_cell(damaged))
    before = _snapshot(tmp_path)
    start = f"{_cell(damaged)}: {what}"
    code, out, err = _inproc(capsys, "report", damaged)
    assert code == 0 and err == "" and f"cell file r.cells/{CELL}.json.gz unreadable: {what}" in out
    for args in (["report", damaged, "--rederive"], ["compare", good, damaged], ["compare", damaged, good],
                 ["baseline", good, damaged, "-o", tmp_path / "base.json"],
                 ["merge", damaged, good, "-o", tmp_path / "merged.json"]):
        _one_line(*_inproc(capsys, *args), start)
    code, out, err = _inproc(capsys, "history", damaged, good, RUNS[2])
    assert code == 0 and err.splitlines()[0].startswith(f"history: unreadable night {damaged}: {start}"), err
    assert "2 nights: r .. run-3" in out
    assert _snapshot(tmp_path) == before  # nothing written, nothing rewritten


@pytest.mark.parametrize("manifest", ["garbage", "cut short"])
def test_a_damaged_manifest_is_one_line_in_every_command(tmp_path, capsys, manifest):
    damaged, good = _written(tmp_path / "a", RUNS[0]), _written(tmp_path / "b", RUNS[1])
    text = damaged.read_text()
    damaged.write_text("\x00garbage}" if manifest == "garbage" else text[: len(text) // 2])
    before = _snapshot(tmp_path)
    what = "not a results file" if manifest == "garbage" else "truncated results file"
    start = f"{damaged}: {what}"
    for args in (["report", damaged], ["report", damaged, "--rederive"], ["compare", good, damaged],
                 ["baseline", good, damaged, "-o", tmp_path / "base.json"],
                 ["merge", damaged, good, "-o", tmp_path / "merged.json"]):
        _one_line(*_inproc(capsys, *args), start)
    code, out, err = _inproc(capsys, "history", damaged, good, RUNS[2])
    assert code == 0 and err.splitlines()[0].startswith(f"history: unreadable night {damaged}: {what}"), err
    assert _snapshot(tmp_path) == before


def test_a_killed_writers_temp_files_are_passed_over_by_readers_and_cleaned_by_the_next_writer(tmp_path, capsys):
    out = _written(tmp_path)
    leftovers = [tmp_path / ".r.json.1a2b3c4d.tmp", cells_dir(out) / f".{CELL}.json.gz.5e6f7a8b.tmp",
                 tmp_path / ".r.cells.old-123-456" / f"{CELL}.json.gz"]
    for p in leftovers:
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"PK\x03\x04 half a file")
    before = _snapshot(tmp_path)
    code, text, err = _inproc(capsys, "report", out)
    assert code == 0 and "unreadable" not in text and len(load_results(out).unreadable) == 0
    assert _snapshot(tmp_path) == before  # a reader never cleans: a live writer may own them
    write_results(out, load_results(RUNS[1]))  # the next writer of the path claims it, then cleans
    assert not any(p.exists() for p in leftovers) and not (tmp_path / ".r.cells.old-123-456").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.json.lock", "r.cells", "r.json"]


@pytest.mark.parametrize("kind", ["truncated", "a JSON object", "a JSON list"])
def test_an_unfinished_runs_damaged_unlisted_cell_file_is_an_error_entry(tmp_path, kind):
    """An unfinished run's cell files not yet in its manifest are read too (what ``run --resume`` loads)."""
    rec = load_results(RUNS[0])
    out = tmp_path / "r.json"
    write_results(out, dataclasses.replace(rec, finished=False))
    manifest = json.loads(out.read_text())
    listed = manifest["decode"].pop()["cell_file"]
    out.write_text(json.dumps(manifest))
    assert len(load_results(out).decode) == len(rec.decode)  # the unlisted cell file is found
    DAMAGE[kind][0](cells_dir(out) / listed)
    (cells_dir(out) / "decode-999x7.json.gz").write_bytes(b"")  # not a cell of the plan: no entry
    (cells_dir(out) / "notes.json.gz").write_bytes(gzip.compress(b"[]"))  # named as no entry: passed over
    again = load_results(out)
    assert [e.key for e in again.decode] == [e.key for e in rec.decode]
    lost = again.decode[-1]
    assert lost.status == st.ERROR and lost.reason.endswith("(not yet in the manifest)")
    assert [u.entry for u in again.unreadable] == [listed.split(".", 1)[0]]
    assert DAMAGE[kind][1] in again.unreadable[0].reason


def test_an_npz_cell_file_whose_skeleton_is_not_a_cell_files_is_an_error_entry(tmp_path):
    """Schema 8's ``.npz`` cell files: a skeleton holding a list is that entry's damage, the rest loads."""
    source = FIXTURES / "schemas" / "v8.json"
    shutil.copyfile(source, tmp_path / "v8.json")
    shutil.copytree(cells_dir(source), cells_dir(tmp_path / "v8.json"))
    np.savez(cells_dir(tmp_path / "v8.json") / "decode-256x4.npz", skeleton=np.frombuffer(b"[1, 2]", np.uint8))
    rec, good = load_results(tmp_path / "v8.json"), load_results(source)
    assert [e.status for e in rec.decode] == [good.decode[0].status, st.ERROR]
    assert rec.decode[0].figures == good.decode[0].figures
    assert "not a cell file (its 'skeleton' holding a list, not an object)" in rec.decode[1].error


def test_a_cut_short_summary_is_one_line_naming_it(tmp_path):
    summary = tmp_path / "n.summary.json"
    write_summary(summary, load_results(RUNS[1]), str(RUNS[1]), SubWindowing())
    summary.write_text(summary.read_text()[:-40])
    with pytest.raises(UsageError, match=f"^{summary}: truncated results file"):
        load_runs(summary)
    with pytest.raises(UsageError, match=f"^{summary}: truncated summary"):
        read_nights([str(summary), str(RUNS[2])])


def test_a_damaged_night_is_listed_and_the_rest_judged(tmp_path):
    damaged = _written(tmp_path, RUNS[0], "night-1.json")
    _truncate(_cell(damaged))
    inputs = [str(damaged), str(RUNS[1]), str(RUNS[2])]
    nights, unreadable = read_nights_checked(inputs)
    assert [n.path for n in nights] == inputs[1:]
    assert unreadable == (Unreadable(str(damaged), f"{_cell(damaged)}: truncated cell file (its end is missing: "
                                     "an interrupted copy?). Copy the results folder again from where the run "
                                     "wrote it, or measure the cell again. (a history reads that entry's raw "
                                     "records; 'inproc report' shows the rest.)"),)
    assert build_history(nights).exit_code == 0  # the two readable nights are judged
    with pytest.raises(UsageError, match=f"^{damaged}: {_cell(damaged)}: truncated cell file"):
        read_nights(inputs)  # the plain reader still stops at it
    with pytest.raises(UsageError, match=f"at least 3 nights; got 2 .*\\(1 unreadable: {damaged}\\)"):
        read_nights_checked(inputs, at_least=3)  # only readable nights count
