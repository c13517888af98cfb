"""A damaged results file is one line naming the damaged file and what is wrong, never a traceback;
reading never rewrites anything; a history passes a damaged night over and judges the rest.

The damage is what an interrupted copy or a disk leaves: a cell file cut short, empty, replaced
by something else, changed inside, or missing; a manifest or a summary cut short.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from inproc.compare.samples import SubWindowing
from inproc.errors import UsageError
from inproc.history.build import build_history
from inproc.history.nights import Unreadable, read_nights, read_nights_checked
from inproc.record.baseline import load_runs
from inproc.record.io import cells_dir, load_results, write_results
from inproc.record.summary import write_summary
from tests.conftest import DEFAULT_PROFILE, FIXTURES

RUNS = [FIXTURES / "compare" / f"run-{i}.json" for i in (1, 2, 3)]


def _written(tmp_path: Path, source: Path = RUNS[0], name: str = "r.json") -> Path:
    out = tmp_path / name
    write_results(out, load_results(source))
    return out


def _cell(results: Path) -> Path:
    return cells_dir(results) / "decode-256x1.json.gz"


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _garble(p: Path) -> None:
    b = bytearray(p.read_bytes())
    middle = len(b) // 2
    b[middle:middle + 32] = bytes(32)  # same size, compressed bytes changed
    p.write_bytes(bytes(b))


DAMAGE = {
    "truncated": (_truncate, "truncated cell file"),
    "empty": (lambda p: p.write_bytes(b""), "empty cell file"),
    "foreign": (lambda p: p.write_text("not a cell\n"), "not a cell file (not gzip-compressed JSON)"),
    "garbled": (_garble, "damaged cell file"),
    "missing": (Path.unlink, "missing cell file"),
}


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_cell_file_is_one_line_naming_it_and_nothing_is_rewritten(tmp_path, kind):
    out = _written(tmp_path)
    damage, what = DAMAGE[kind]
    damage(_cell(out))
    before = _snapshot(tmp_path)
    for rederive in (False, True):
        with pytest.raises(UsageError) as e:
            load_results(out, rederive=rederive)
        message = str(e.value)
        assert message.startswith(f"{_cell(out)}: {what}") and "\n" not in message, message
    assert _snapshot(tmp_path) == before


def test_an_unfinished_runs_damaged_unlisted_cell_file_is_one_line(tmp_path):
    """An unfinished run's cell files not yet in its manifest are read too (what ``run --resume`` loads)."""
    rec = load_results(RUNS[0])
    out = tmp_path / "r.json"
    write_results(out, dataclasses.replace(rec, finished=False))
    manifest = json.loads(out.read_text())
    listed = manifest["decode"].pop()["cell_file"]
    out.write_text(json.dumps(manifest))
    assert len(load_results(out).decode) == len(rec.decode)  # the unlisted cell file is found
    _truncate(cells_dir(out) / listed)
    with pytest.raises(UsageError, match=f"^{cells_dir(out) / listed}: truncated cell file"):
        load_results(out)


def test_a_cut_short_manifest_or_summary_is_one_line_naming_it(tmp_path):
    out = _written(tmp_path)
    out.write_text(out.read_text()[:3000])
    with pytest.raises(UsageError, match=f"^{out}: truncated results file .*interrupted copy"):
        load_results(out)
    summary = tmp_path / "n.summary.json"
    write_summary(summary, load_results(RUNS[1]), str(RUNS[1]), SubWindowing())
    summary.write_text(summary.read_text()[:-40])
    with pytest.raises(UsageError, match=f"^{summary}: truncated results file"):
        load_runs(summary)
    with pytest.raises(UsageError, match=f"^{summary}: truncated summary"):
        read_nights([str(summary), str(RUNS[2])])
    garbled = tmp_path / "g.json"
    garbled.write_text('{"schema_version": 8, oops}')
    with pytest.raises(UsageError, match=f"^{garbled}: not a results file \\(invalid JSON"):
        load_results(garbled)


def test_a_damaged_night_is_listed_and_the_rest_judged(tmp_path):
    damaged = _written(tmp_path, RUNS[0], "night-1.json")
    _truncate(_cell(damaged))
    inputs = [str(damaged), str(RUNS[1]), str(RUNS[2])]
    nights, unreadable = read_nights_checked(inputs)
    assert [n.path for n in nights] == inputs[1:]
    assert unreadable == (Unreadable(str(damaged), f"{_cell(damaged)}: truncated cell file (its end is missing: "
                                     "an interrupted copy?). Copy the results folder again from where the run "
                                     "wrote it, or measure the cell again."),)
    assert build_history(nights).exit_code == 0  # the two readable nights are judged
    with pytest.raises(UsageError, match=f"^{damaged}: {_cell(damaged)}: truncated cell file"):
        read_nights(inputs)  # the plain reader still stops at it
    with pytest.raises(UsageError, match=f"at least 3 nights; got 2 .*\\(1 unreadable: {damaged}\\)"):
        read_nights_checked(inputs, at_least=3)  # only readable nights count


@pytest.mark.engine  # starts `python -m inproc`
def test_every_reading_command_gives_one_line_on_a_damaged_cell_file(tmp_path, run_inproc):
    damaged, good = _written(tmp_path, RUNS[0], "a.json"), _written(tmp_path, RUNS[1], "b.json")
    _truncate(_cell(damaged))
    before = _snapshot(tmp_path)
    for args in (["report", damaged], ["report", damaged, "--rederive", "--format", "csv"], ["compare", good, damaged],
                 ["baseline", good, damaged, "-o", tmp_path / "base.json"],
                 ["run", DEFAULT_PROFILE, "--resume", damaged]):
        p = run_inproc(*map(str, args), timeout=120)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and p.stdout == "" and len(lines) == 1, (args, p.returncode, p.stderr[-3000:])
        assert lines[0].startswith(f"Error: {_cell(damaged)}: truncated cell file"), (args, lines)
    history = run_inproc("history", str(damaged), str(good), str(RUNS[2]), timeout=120)
    assert history.returncode == 0 and "Traceback" not in history.stderr, history.stderr
    assert history.stderr.splitlines()[0].startswith(f"history: unreadable night {damaged}: {_cell(damaged)}: truncated")
    assert "2 nights: b .. run-3" in history.stdout
    assert _snapshot(tmp_path) == before  # nothing written, nothing rewritten
