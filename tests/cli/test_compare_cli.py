"""inproc compare and inproc baseline as a user (and the nightly job) runs them: exit codes, one-line errors, reports."""
from __future__ import annotations

import json
import re
from pathlib import Path
from dataclasses import replace

import pytest

from inproc.record.io import SCHEMA_VERSION, load_results, write_results
from tests.cli.test_cli import inproc
from tests.conftest import FIXTURES

pytestmark = [pytest.mark.engine, pytest.mark.engine_free]  # every test here starts `python -m inproc`, which builds no engine

HERE = FIXTURES / "compare"
RUN1, RUN2, RUN3, HOG, SEQS2 = (str(HERE / f"{n}.json") for n in ("run-1", "run-2", "run-3", "hog", "seqs2"))


def one_line_error(p, needle: str) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in p.stderr, p.stderr
    assert needle in lines[0], lines[0]
    assert p.stdout == ""
    return lines[0]


def test_exit_0_when_nothing_regressed_and_1_on_a_regression():
    same = inproc("compare", RUN1, RUN1, "--run-spread", "5%", "--metric", "tok_s,tbt")
    assert same.returncode == 0 and same.stdout.rstrip().endswith("No regression (8 not significant).")
    # TTFT at C = 1 has too few requests in a 1 s window: nothing regressed, but not every row was judged.
    some = inproc("compare", RUN1, RUN1, "--run-spread", "5%")
    assert some.returncode == 3 and some.stdout.rstrip().endswith(
        "No regression found, but 2 rows could not be judged (256 x 1 ttft, 1K x 1 ttft: too few samples) "
        "(10 not significant, 2 not comparable).")
    slower = inproc("compare", RUN1, HOG, "--run-spread", "10%")
    assert slower.returncode == 1
    assert "10 regressions (one run each side, against the stated --run-spread): 256x1 tok_s 3.20x slower, at least" \
        in slower.stdout
    assert re.search(r"^\+ 256 x 4 +tok_s +502\.5 tok/s +128\.9 tok/s +0\.257 +\[0\.\d+, 0\.\d+\] +3\.90x slower, at least "
                     r"3\.\d+x with 80 % confidence \(one run each side, against the stated --run-spread\)$", slower.stdout, re.M)
    faster = inproc("compare", HOG, RUN1, "--metric", "tok_s", "--run-spread", "10%")
    assert faster.returncode == 0 and faster.stdout.count("x faster") == 4  # one per cell
    assert faster.stdout.rstrip().endswith("No regression (4 faster).")
    # One run each side with no stated spread: the spread each change needs to be noise, against --max-spread 25 %.
    alone = inproc("compare", RUN1, HOG)
    assert alone.returncode == 1 and alone.stdout.rstrip().endswith("(8 slower, 2 not significant, 2 not comparable).")
    assert re.search(r"^\+ 1K x 1 +tok_s .* 16\.42x slower, at least .*; noise only if runs varied by \d\d % or more, "
                     r"beyond --max-spread 25 %$", alone.stdout, re.M)
    assert re.search(r"^  256 x 1 +tbt .* within --max-spread 25 %: noise if runs varied by \d\d % or more$",
                     alone.stdout, re.M)
    wide = inproc("compare", RUN1, HOG, "--max-spread", "200%")
    assert wide.returncode == 3 and "No regression found, but 2 rows could not be judged" in wide.stdout


def test_json_report_carries_every_row_and_the_exit_code(tmp_path):
    out = tmp_path / "compare.json"
    p = inproc("compare", RUN1, HOG, "--run-spread", "10%", "--format", "json", "-o", str(out))
    assert p.returncode == 1 and p.stdout == ""
    doc = json.loads(out.read_text())
    assert doc["kind"] == "inproc-compare" and doc["exit_code"] == 1 and len(doc["rows"]) == 12
    row = next(r for r in doc["rows"] if (r["cell"], r["metric"]) == ("256x4", "tok_s"))
    assert row["verdict"] == "slower" and row["test"] == "block bootstrap" and row["indicative"] and row["unit"] == "tok/s"
    assert row["low"] < row["ratio"] < row["high"] < 1 and row["n_base"] >= 9
    assert row["p_change"] < 0.05 and 1.05 < row["at_least"] < 1 / row["ratio"] and row["spread_source"] == "--run-spread"
    assert doc["settings"]["sub_window"] == "0.1 s sub-windows"
    assert doc["settings"]["alarm_rate"] == 0.05 and doc["settings"]["threshold_confidence"] == 0.8
    # Rows that could not be judged are listed with their cause, and the exit code says so.
    undecided = tmp_path / "undecided.json"
    assert inproc("compare", RUN1, RUN2, "--format", "json", "-o", str(undecided)).returncode == 3
    doc = json.loads(undecided.read_text())
    assert doc["exit_code"] == 3 and doc["settings"]["max_spread"] == 0.25
    assert doc["undecided"] == [{"cell": k, "metric": "ttft", "verdict": "not comparable", "cause": "too few samples"}
                                for k in ("256x1", "1024x1")]
    assert all(r["needed_spread"] < 0.25 for r in doc["rows"] if r["ratio"] is not None)


def test_help_documents_the_exit_codes():
    p = inproc("compare", "--help")
    text = " ".join(p.stdout.split())
    assert p.returncode == 0 and "Exit code: 0 every row judged and none regressed; 1 a regression; 3 no regression " \
        "found, but some rows could not be judged" in text and "--max-spread" in text


def test_markdown_is_a_job_summary(tmp_path):
    p = inproc("compare", RUN1, SEQS2, "--format", "md", "--allow-different", "profile.engine_args.max-num-seqs")
    assert p.returncode == 1
    md = p.stdout
    assert md.startswith("## inproc compare: regression\n\n**1 regression: 256x4 Valid → Requests queued: max_num_seqs=2 < C=4;")
    assert "- Allowed to differ: profile.engine_args.max-num-seqs (8 vs 2)" in md
    tables = [ln for ln in md.splitlines() if ln.startswith("|")]
    header = "| | Cell | Metric | Baseline | New | Ratio | Interval | Verdict |"
    assert tables.count(header) == 2  # the changes, then every row folded in <details>
    for line in tables:  # every row has the header's columns (a literal | would be escaped)
        assert len(re.findall(r"(?<!\\)\|", line)) == 9, line
    changes = md.split("### Changes")[1].split("<details>")[0]
    assert "| `!` | 256 x 4 | tok_s |" in changes and "| `<` | 1K x 1 | tok_s |" in changes
    assert "| `>` | 2K x 4 | ttft |" in changes and "not significant" not in changes
    assert "<summary>All 18 rows</summary>" in md and md.rstrip().endswith("</details>")
    assert "**status changed: Valid → Requests queued" in md


def test_a_baseline_of_runs_is_compared_by_the_spread_between_runs(tmp_path):
    base = tmp_path / "baseline.json"
    made = inproc("baseline", RUN1, RUN2, RUN3, "-o", str(base))
    assert made.returncode == 0 and made.stderr.strip() == f"baseline: {base} (3 runs of cpu-vllm-tiny-llama)"
    raw = json.loads(base.read_text())
    assert raw["kind"] == "inproc-baseline" and raw["baseline_version"] == 2 and raw["sources"] == [RUN1, RUN2, RUN3]
    assert [r["run"]["schema_version"] for r in raw["runs"]] == [SCHEMA_VERSION] * 3
    assert raw["runs"][0]["run"]["decode"][0]["trace"] is None and raw["runs"][0]["cells"]  # compact: no raw records
    assert base.stat().st_size < sum(Path(r).stat().st_size for r in (RUN1, RUN2, RUN3)) / 2
    p = inproc("compare", str(base), HOG, "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["baseline"]["runs"] == 3
    assert {(r["test"], r["n_base"], r["verdict"]) for r in doc["rows"]} == {("between-run t", 3, "slower")}
    again = inproc("baseline", RUN1, "-o", str(base))
    one_line_error(again, "exists. Pass --force")
    assert json.loads(base.read_text())["sources"] == [RUN1, RUN2, RUN3]  # left as it was
    report = inproc("report", str(base))
    one_line_error(report, "a baseline of several runs, not one results file")


def test_different_profiles_are_refused_with_the_key_named():
    line = one_line_error(inproc("compare", RUN1, SEQS2), "profile.engine_args.max-num-seqs (8 vs 2)")
    assert "--allow-different profile.engine_args.max-num-seqs" in line


def test_another_engine_version_is_not_comparable_unless_allowed(tmp_path):
    rec = load_results(RUN2)
    other = tmp_path / "newer-engine.json"
    write_results(other, replace(rec, engine=replace(rec.engine, version="0.33.0.dev1")))
    one_line_error(inproc("compare", RUN1, str(other)), "engine.version (0.32.0 vs 0.33.0.dev1) differ")
    p = inproc("compare", RUN1, str(other), "--allow-different", "engine.version")
    # One run each side, against --max-spread: nothing regressed; C = 1's TTFT has too few samples (exit 3).
    assert p.returncode == 3 and "Allowed to differ: engine.version (0.32.0 vs 0.33.0.dev1)" in p.stdout
    # A baseline holding both versions names both, and Markdown escapes the | between them.
    base = tmp_path / "mixed-versions.json"
    assert inproc("baseline", RUN1, str(other), "-o", str(base), "--allow-different", "engine.version").returncode == 0
    md = inproc("compare", str(base), RUN3, "--format", "md", "--allow-different", "engine.version").stdout
    assert "engine.version (0.32.0 \\| 0.33.0.dev1 vs 0.32.0)" in md


def test_a_baseline_of_mixed_profiles_is_refused(tmp_path):
    out = tmp_path / "baseline.json"
    one_line_error(inproc("baseline", RUN1, SEQS2, "-o", str(out)), "The baseline mixes runs of different profiles")
    assert not out.exists()
    # A baseline file edited (or written by hand) to mix them is refused by compare too.
    assert inproc("baseline", RUN1, SEQS2, "-o", str(out), "--allow-different", "profile").returncode == 0
    one_line_error(inproc("compare", str(out), RUN2), f"Baseline {out} mixes runs of different profiles")


@pytest.mark.parametrize("what", ["results", "baseline"])
def test_a_newer_schema_is_refused(tmp_path, what):
    raw = json.loads(open(RUN1).read())
    path = tmp_path / "newer.json"
    if what == "results":
        raw["schema_version"] = SCHEMA_VERSION + 1
        needle = f"schema_version {SCHEMA_VERSION + 1} is newer than this inproc reads"
    else:
        raw = {"kind": "inproc-baseline", "baseline_version": 3, "runs": [raw]}
        needle = "baseline_version 3 is newer than this inproc reads"
    path.write_text(json.dumps(raw))
    for args in ((str(path), RUN1), (RUN1, str(path))):
        one_line_error(inproc("compare", *args), needle)


@pytest.mark.parametrize("args,needle", [
    (["--threshold", "0.05"], "'0.05'"),
    (["--threshold", "150%"], "150%"),
    (["--metric", "tok_s,tpot"], "'tpot'"),
    (["--format", "html"], "'html'"),
    (["--allow-different", "gpu.colour"], "'gpu.colour'"),
    (["--sub-window", "0s"], "'0s'"),
    (["--sub-window", "2.5steps"], "'2.5steps'"),
    (["--max-spread", "0%"], "Bad --max-spread '0%'"),
    (["--max-spread", "0.25"], "Bad --max-spread '0.25'"),
    (["--max-spread", "300%"], "Bad --max-spread '300%'"),
    (["--max-spread", "25%", "--run-spread", "3%"], "give one of the two"),
])
def test_bad_flags_are_one_line_errors_and_write_nothing(args, needle, tmp_path):
    out = tmp_path / "compare.md"
    one_line_error(inproc("compare", RUN1, RUN2, *args, "-o", str(out)), needle)
    assert not out.exists()


def test_a_report_never_replaces_a_results_file(tmp_path):
    one_line_error(inproc("compare", RUN1, RUN2, "-o", RUN2), "is one of the files compared")
    copy = tmp_path / "copy.json"
    copy.write_text(open(RUN3).read())
    one_line_error(inproc("compare", RUN1, RUN2, "--format", "json", "-o", str(copy)), "is a results or baseline file")


ENGINES_VLLM, ENGINES_SGLANG = str(HERE / "engines-vllm.json"), str(HERE / "engines-sglang.json")


def test_two_engines_are_shown_side_by_side_with_exit_0(tmp_path):
    p = inproc("compare", ENGINES_VLLM, ENGINES_SGLANG)
    assert p.returncode == 0 and p.stderr == ""
    assert "Two engines side by side" in p.stdout and "No regression verdict between two engines (exit 0)" in p.stdout
    assert re.search(r"^256 x 4 +Status +Valid +Valid$", p.stdout, re.M)
    assert re.search(r"^ +Total tok/s +\d[\d.,]* tok/s +\d[\d.,]* tok/s +\d\.\d{3}$", p.stdout, re.M)
    out = tmp_path / "engines.json"
    assert inproc("compare", ENGINES_VLLM, ENGINES_SGLANG, "--format", "json", "-o", str(out)).returncode == 0
    doc = json.loads(out.read_text())
    assert doc["kind"] == "inproc-side-by-side" and doc["exit_code"] == 0 and len(doc["cells"]) == 4
    tok = next(f for f in doc["cells"][0]["figures"] if f["label"] == "Total tok/s")
    assert tok["ratio"] == pytest.approx(tok["new"] / tok["base"])
    # Two engines on different grids: refused as compare refuses, the key named.
    one_line_error(inproc("compare", RUN1, ENGINES_SGLANG), "ran different engines on different grids")


def test_run_spread_sets_what_one_run_against_one_is_judged_by():
    # run-2 -> run-3 at 256 x 1: 1.16x slower; inside a stated 10 % run spread, a change at 0 %.
    loose = inproc("compare", RUN2, RUN3, "--metric", "tok_s", "--run-spread", "10%")
    assert loose.returncode == 0 and re.search(r"^  256 x 1 +tok_s .* not significant: within the noise$", loose.stdout, re.M)
    strict = inproc("compare", RUN2, RUN3, "--metric", "tok_s", "--run-spread", "0%")
    assert strict.returncode == 1 and re.search(r"^\+ 256 x 1 +tok_s .*1\.16x slower, at least .*\(one run each", strict.stdout, re.M)
    # 1K x 4 is 1.06x slower, but its 80 % bound is not past 5 %: the threshold holds for the change itself.
    assert re.search(r"^  1K x 4 +tok_s .* 1\.06x slower, not beyond the 5% threshold with 80 % confidence", strict.stdout, re.M)
    one_line_error(inproc("compare", RUN2, RUN3, "--run-spread", "3"), "Bad --run-spread '3'")
    one_line_error(inproc("compare", RUN2, RUN3, "--threshold-confidence", "40%"), "Bad --threshold-confidence '40%'")