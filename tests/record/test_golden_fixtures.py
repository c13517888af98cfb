"""Every saved fixture's report, byte for byte as the golden files in ``tests/fixtures/golden/`` hold it.

The golden files were rendered by ``scripts/update_golden.py``; a change to how a file of any
schema loads (its migration, its cell files, the derivation) that alters a report shows here.
"""
from __future__ import annotations

import pytest

from scripts.update_golden import FIXTURE_FILES, GOLDEN_DIR, golden_reports


def test_every_fixture_has_golden_reports():
    """The list covers every schema's fixture and the history summaries (a fixture left out is never checked)."""
    assert {f"schemas/v{v}.json" for v in range(3, 11)} <= set(FIXTURE_FILES)
    assert {"cpu-vllm-small.json", "compare/run-1.json"} <= set(FIXTURE_FILES)  # schemas 1 and 2
    assert any(f.startswith("history/") for f in FIXTURE_FILES)
    expected = {file for name in FIXTURE_FILES for file in golden_reports(name)}
    assert expected == {p.name for p in GOLDEN_DIR.iterdir() if p.is_file()}, "run scripts/update_golden.py"


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_a_fixtures_report_is_its_golden_file_byte_for_byte(name):
    for file, text in golden_reports(name).items():
        assert text == (GOLDEN_DIR / file).read_text(), f"{file}: run scripts/update_golden.py after an intended change"
