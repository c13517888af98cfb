"""``inproc run`` on a results path that holds a damaged, an old or a killed run's folder.

``--resume`` of a folder with a damaged cell file stops with one line before any build and
changes nothing; ``--force`` over an old folder removes its cells and a killed writer's
temp files before the new run writes; a resumed run keeps its first ``created``.
"""
from __future__ import annotations

import json

import pytest

from inproc.record.load import read_cell
from inproc.record.contain import CellFolder
from inproc.record.io import cells_dir, load_results, write_results
from tests.conftest import DEFAULT_PROFILE, FIXTURES, needs_vllm
from tests.spawn import run_inproc

pytestmark = pytest.mark.engine  # every test here starts `python -m inproc`

TINY = ["--cells", "256x1", "--no-prefill", "--duration", "0.3", "--max-output", "16", "--seed", "3",
        "--telemetry-hz", "0", "--no-loop-check"]


def _snapshot(folder):
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


def test_resume_of_a_folder_with_a_damaged_cell_file_is_one_line_and_changes_nothing(tmp_path):
    out = tmp_path / "r.json"
    write_results(out, load_results(FIXTURES / "compare" / "run-1.json"))
    manifest = json.loads(out.read_text())
    out.write_text(json.dumps({**manifest, "finished": False}))
    cell = cells_dir(out) / "decode-256x1.json.gz"
    cell.write_bytes(cell.read_bytes()[:200])
    before = _snapshot(tmp_path)
    p = run_inproc("run", str(DEFAULT_PROFILE), "--resume", str(out), timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert lines[0].startswith(f"Error: {cell}: truncated cell file") and "--resume reads that entry's raw" in lines[0]
    assert _snapshot(tmp_path) == before


@pytest.mark.long
@needs_vllm
def test_force_clears_the_old_folder_and_a_resumed_run_keeps_its_created(tmp_path):
    out = tmp_path / "r.json"
    write_results(out, load_results(FIXTURES / "compare" / "run-1.json"))  # an old run of another plan
    stray = [tmp_path / ".r.json.0badf00d.tmp", cells_dir(out) / ".decode-256x1.json.gz.0badf00d.tmp"]
    for p in stray:
        p.write_bytes(b"half a file")
    old = {p.name for p in cells_dir(out).iterdir()}
    first = run_inproc("run", str(DEFAULT_PROFILE), *TINY, "--out", str(out), "--force", timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    rec = load_results(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.json.lock", "r.cells", "r.json", "r.md"]
    # Only the new run's one entry is left: its cell file and the Parquet tables beside it.
    assert {p.name.split(".", 1)[0] for p in cells_dir(out).iterdir()} == {"decode-256x1"} and len(old) > 1
    assert read_cell(CellFolder.at(cells_dir(out)), "decode-256x1.json.gz")["created"] == rec.created and not rec.unreadable

    # The run killed before it finished: resume it; it measures the cell again and keeps its first created.
    manifest = json.loads(out.read_text())
    out.write_text(json.dumps({**manifest, "finished": False, "decode": []}))
    for p in cells_dir(out).iterdir():  # the cell file and its tables
        p.unlink()
    again = run_inproc("run", str(DEFAULT_PROFILE), *TINY, "--resume", str(out), timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = load_results(out)
    assert resumed.created == rec.created and resumed.finished and not resumed.unreadable
    assert len([n for n in resumed.notes if n.startswith("resumed 2")]) == 1  # "resumed" and when
    assert read_cell(CellFolder.at(cells_dir(out)), "decode-256x1.json.gz")["created"] == rec.created
