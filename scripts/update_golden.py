#!/usr/bin/env python3
"""Regenerate the golden reports the tests compare against (run from the repo root).

  .venv-vllm/bin/python scripts/update_golden.py

Renders ``tests/fixtures/cpu-vllm-small.json`` (a real CPU run) with today's report and
writes ``tests/fixtures/cpu-vllm-small.md``; and renders every run of every saved fixture
(results files of each schema, history summaries: ``FIXTURE_FILES``) into
``tests/fixtures/golden/`` (the report's Markdown and CSV and the terminal's matrix, one of each per run), which
``tests/record/test_golden_fixtures.py`` sets each fixture's report against byte for byte; and every
report command in every format on saved fixtures (``scripts/golden_commands.py``) into
``tests/fixtures/golden/commands/``, which ``tests/render/test_golden_commands.py`` checks.
Run it after an intended change to the report or to how a file loads, review the diff by
eye, and commit both; the tests themselves only compare.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inproc.record.baseline import load_runs  # noqa: E402
from inproc.record.io import load_results  # noqa: E402
from inproc.render.csv import render_csv  # noqa: E402
from inproc.render.markdown import render_markdown  # noqa: E402
from inproc.render.text import render_matrix  # noqa: E402
from scripts.golden_commands import GOLDEN_COMMANDS, command_reports  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
SOURCE = FIXTURES / "cpu-vllm-small.json"
GOLDEN = SOURCE.with_suffix(".md")
GOLDEN_DIR = FIXTURES / "golden"
#: Every saved fixture that loads as runs (results files of every schema, summaries), relative to FIXTURES; the
#: recorded GPU facts (h200/: profiler traces, the GPU check's and NVML's figures) are no runs.
FIXTURE_FILES = tuple(sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.json")
                             if not {"golden", "reference", "h200"} & set(p.parts)))


def golden_reports(name: str) -> dict[str, str]:
    """The reports of fixture ``name`` (relative to FIXTURES): golden file name -> its text."""
    out = {}
    for i, rec in enumerate(load_runs(Path("tests") / "fixtures" / name).runs):
        stem = name.removesuffix(".json").replace("/", "__") + (f".run{i + 1}" if i else "")
        out[f"{stem}.md"] = render_markdown(rec)
        out[f"{stem}.csv"] = render_csv(rec)
        out[f"{stem}.txt"] = render_matrix(rec)  # the matrix run, cell and merge print
    return out


def main() -> int:
    """Write the golden files; say whether each changed."""
    got = render_markdown(load_results(SOURCE))
    before = GOLDEN.read_text() if GOLDEN.exists() else None
    GOLDEN.write_text(got)
    print(f"{GOLDEN.relative_to(ROOT)}: {'unchanged' if got == before else 'rewritten; review the diff'}")
    GOLDEN_DIR.mkdir(exist_ok=True)
    for name in FIXTURE_FILES:
        for file, text in golden_reports(name).items():
            path = GOLDEN_DIR / file
            before = path.read_text() if path.exists() else None
            path.write_text(text)
            print(f"{path.relative_to(ROOT)}: {'unchanged' if text == before else 'rewritten; review the diff'}")
    GOLDEN_COMMANDS.mkdir(exist_ok=True)
    for file, text in command_reports().items():
        path = GOLDEN_COMMANDS / file
        before = path.read_text() if path.exists() else None
        path.write_text(text)
        print(f"{path.relative_to(ROOT)}: {'unchanged' if text == before else 'rewritten; review the diff'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
