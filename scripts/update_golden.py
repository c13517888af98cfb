#!/usr/bin/env python3
"""Regenerate the golden Markdown report the tests compare against (run from the repo root).

  .venv-vllm/bin/python scripts/update_golden.py

Renders ``tests/fixtures/cpu-vllm-small.json`` (a real CPU run) with today's report and
writes ``tests/fixtures/cpu-vllm-small.md``. Run it after an intended change to the report,
review the diff by eye, and commit both; the test itself only compares.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inproc.record.io import load_results  # noqa: E402
from inproc.render.markdown import render_markdown  # noqa: E402

SOURCE = ROOT / "tests" / "fixtures" / "cpu-vllm-small.json"
GOLDEN = SOURCE.with_suffix(".md")


def main() -> int:
    """Write the golden file; say whether it changed."""
    got = render_markdown(load_results(SOURCE))
    before = GOLDEN.read_text() if GOLDEN.exists() else None
    GOLDEN.write_text(got)
    print(f"{GOLDEN.relative_to(ROOT)}: {'unchanged' if got == before else 'rewritten; review the diff'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
