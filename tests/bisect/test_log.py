"""The bisect log: lines written as it goes, read back by --resume (a last line cut by a kill is dropped)."""
from __future__ import annotations

import json

import pytest

from inproc.bisect.log import LogWriter, RunLine, VerdictLine, check_same, parse_lines, read_log
from inproc.errors import UsageError

HEADER = {"cell": "256x2", "profile": "/p.toml", "targets": ["a", "b", "c"], "settings": {"seed": 0}}


def written(tmp_path):
    path = tmp_path / "bisect.jsonl"
    w = LogWriter(path)
    w.header({**HEADER, "origin": {"sha": "c", "branch": "main"}})
    w.run(RunLine(2, "c", "bad", "/r/1.json", 0, "Valid", "", 50.0, "", 20.0))
    w.run(RunLine(0, "a", "good", "/r/2.json", 0, "Valid", "", 100.0, "", 19.0))
    w.verdict(VerdictLine(2, "c", "bad", "2.00x slower", 0.5, 0.45, 0.55, 1))
    w.run(RunLine(1, "b", "candidate", "", -1, "failed", "--build exited 1: boom", None, "--build exited 1: boom"))
    return path


def test_resume_reads_back_every_run_and_verdict(tmp_path):
    log = read_log(written(tmp_path))
    assert log.header["origin"] == {"sha": "c", "branch": "main"}
    assert [(r.index, r.role, r.tok_s) for r in log.runs] == [(2, "bad", 50.0), (0, "good", 100.0), (1, "candidate", None)]
    assert log.verdicts[2].ratio == 0.5 and log.verdicts[2].verdict == "bad"
    check_same(log, HEADER, tmp_path)


def test_a_last_line_cut_by_a_kill_is_dropped(tmp_path):
    path = written(tmp_path)
    lines = path.read_text().splitlines()
    cut = lines + [json.dumps({"kind": "run", "index": 1})[:20]]
    assert len(parse_lines(cut, "log").runs) == 3
    with pytest.raises(UsageError, match="damaged at line 2"):
        parse_lines([lines[0], "{not json", *lines[1:]], "log")


def test_resume_refuses_another_bisect(tmp_path):
    log = read_log(written(tmp_path))
    with pytest.raises(UsageError, match="another cell"):
        check_same(log, {**HEADER, "cell": "1024x2"}, tmp_path)
    with pytest.raises(UsageError, match="Nothing to resume"):
        read_log(tmp_path / "none.jsonl")
