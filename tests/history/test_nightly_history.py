"""scripts/nightly.sh history as the GPU workflow runs it: the store grows a night at a time, the job summary, exit codes."""
from __future__ import annotations

import pytest

from tests.cli.test_nightly import HERE, nightly

pytestmark = [pytest.mark.engine, pytest.mark.engine_free]  # every test here runs scripts/nightly.sh, which starts `python -m inproc`


def test_the_store_grows_and_the_slow_night_fails_the_job(tmp_path):
    store, out, summary = tmp_path / "history", tmp_path / "out", tmp_path / "summary.md"
    first = nightly("history", str(HERE / "run-1.json"), str(store), str(out), summary=summary)
    assert first.returncode == 0 and "a history judges from 2 nights on" in (out / "history.txt").read_text()
    assert [p.name for p in store.iterdir()] == ["run-1.summary.json"] and not (out / "history.md").exists()
    for name in ("run-2", "run-3"):
        nightly("history", str(HERE / f"{name}.json"), str(store), str(out), summary=summary)
    last = nightly("history", str(HERE / "hog.json"), str(store), str(out), summary=summary)
    assert last.returncode == 1, last.stderr
    assert sorted(p.name for p in store.iterdir()) == [f"{n}.summary.json" for n in ("hog", "run-1", "run-2", "run-3")]
    md = (out / "history.md").read_text()
    assert md.startswith("## inproc history: 4 nights") and summary.read_text().endswith(md)
    assert (out / "history.txt").read_text() in last.stdout and "<svg" in (out / "history.html").read_text()


def test_a_bad_run_fails_with_the_error_in_the_summary(tmp_path):
    summary = tmp_path / "summary.md"
    p = nightly("history", str(tmp_path / "no-run.json"), str(tmp_path / "history"), str(tmp_path / "out"), summary=summary)
    assert p.returncode == 2 and summary.read_text().startswith("## inproc history: could not read the history\n")
    assert not (tmp_path / "history").exists()
