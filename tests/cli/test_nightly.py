"""scripts/nightly.sh's compare step as the GPU workflow runs it: reports, job summary, exit code."""
from __future__ import annotations

import json
import sys

import pytest

from tests.cli.test_cli import inproc
from tests.conftest import FIXTURES
from tests.spawn import child_env, run_child

pytestmark = [pytest.mark.engine, pytest.mark.engine_free]  # every test here runs scripts/nightly.sh, which starts `python -m inproc`

HERE = FIXTURES / "compare"


def nightly(*args, summary=None):
    env = child_env(INPROC=f"{sys.executable} -m inproc", NIGHTLY_THRESHOLD="5%", NIGHTLY_ALLOW_DIFFERENT="engine.version")
    env.pop("GITHUB_STEP_SUMMARY", None)  # never the summary of a CI job running these tests
    if summary is not None:
        env["GITHUB_STEP_SUMMARY"] = str(summary)
    return run_child(["bash", "scripts/nightly.sh", *args], env=env, timeout=300)


def test_a_regression_fails_the_job_and_fills_the_summary(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    base = tmp_path / "baseline.json"  # as `nightly.sh baseline` makes it: several runs, so the spread is theirs
    assert inproc("baseline", *(str(HERE / f"run-{i}.json") for i in (1, 2, 3)), "-o", str(base)).returncode == 0
    p = nightly("compare", str(base), str(HERE / "hog.json"), str(tmp_path / "out"), summary=summary)
    assert p.returncode == 1, p.stderr
    out = tmp_path / "out"
    assert json.loads((out / "compare.json").read_text())["exit_code"] == 1
    assert (out / "compare.txt").read_text() in p.stdout  # the text report is also the step's log
    text = summary.read_text()
    assert text.startswith("earlier step\n## inproc compare: regression\n")  # appended, as GitHub expects
    assert text.endswith((out / "compare.md").read_text())


def test_bad_input_fails_with_the_error_in_the_summary(tmp_path):
    summary = tmp_path / "summary.md"
    p = nightly("compare", str(HERE / "run-1.json"), str(HERE / "seqs2.json"), str(tmp_path / "out"), summary=summary)
    assert p.returncode == 2
    assert "profile.engine_args.max-num-seqs (8 vs 2)" in p.stderr
    assert summary.read_text().startswith("## inproc compare: could not compare\n")
    assert "profile.engine_args.max-num-seqs" in summary.read_text()


def test_nothing_regressed_exits_0(tmp_path):
    base = tmp_path / "baseline.json"
    assert inproc("baseline", *(str(HERE / f"run-{i}.json") for i in (1, 2, 3)), "-o", str(base)).returncode == 0
    p = nightly("compare", str(base), str(HERE / "run-1.json"), str(tmp_path / "out"))
    assert p.returncode == 0 and "No regression (12 not significant)." in p.stdout
    assert nightly("bogus").returncode == 2


def test_rows_not_judged_fail_the_job_with_the_reports_written(tmp_path):
    # One run each side: C = 1's TTFT has too few requests in a 1 s window. No regression, but not a pass either.
    summary = tmp_path / "summary.md"
    p = nightly("compare", str(HERE / "run-1.json"), str(HERE / "run-1.json"), str(tmp_path / "out"), summary=summary)
    out = tmp_path / "out"
    assert p.returncode == 3, p.stderr
    assert json.loads((out / "compare.json").read_text())["exit_code"] == 3
    assert "could not be judged (256 x 1 ttft, 1K x 1 ttft: too few samples)" in (out / "compare.txt").read_text()
    assert summary.read_text().startswith("## inproc compare: not every row judged\n")
