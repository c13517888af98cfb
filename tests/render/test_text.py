"""The terminal matrix: an 8 x 8 plan fits in 120 columns, each cell a figure and a short mark with a legend."""
from __future__ import annotations

from dataclasses import replace

from inproc import types as st
from inproc.record.io import load_results
from inproc.render.matrix import Grid
from inproc.render.measurements import DECODE, Measurement
from inproc.render.text import MARKS, WIDTH, grid_lines, legend, render_matrix
from tests.conftest import FIXTURES

CONTEXTS = (8192, 16384, 32768, 65536, 131072, 262144, 524288, 1043456)  # 8K .. 1019K, the default plan's rows
CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)


def eight_by_eight():
    """gpu-like.json (every status, a throttled cell) with its five cells spread over an 8 x 8 plan; the rest Pending."""
    rec = load_results(FIXTURES / "gpu-like.json")
    spots = [(8192, 1), (65536, 16), (1043456, 128), (524288, 2), (16384, 64)]
    decode = [replace(e, context=L, concurrency=C) for e, (L, C) in zip(rec.decode, spots, strict=True)]
    settings = replace(rec.settings, contexts=CONTEXTS, concurrency=CONCURRENCY)
    return replace(rec, plan=replace(rec.plan, settings=settings), decode=decode)


def _grid_rows(text: str, title: str) -> list[str]:
    block = text.split(title + "\n", 1)[1].split("\n\n", 1)[0]
    return block.splitlines()


def test_an_8x8_record_fits_in_120_columns_with_every_mark_explained():
    text = render_matrix(eight_by_eight())
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= WIDTH, max(lines, key=len)
    tok = _grid_rows(text, "Sustained decode: total tok/s (rows: context, columns: concurrency)")
    ttft = _grid_rows(text, "TTFT, ms (median)")
    for rows in (tok, ttft):
        assert len(rows) == 1 + 8 and rows[0].split() == ["Context", *map(str, CONCURRENCY)]
        assert [r.split()[0] for r in rows[1:]] == ["8K", "16K", "32K", "64K", "128K", "256K", "512K", "1019K"]
    # The measured cells, each in its place: figure and mark in the tok/s grid, TTFT in its own grid.
    assert tok[1].split()[1:3] == ["45.7", "!"] and ttft[1].split()[1:3] == ["568", "!"]  # 8K x 1, throttled
    assert tok[4].split()[5] == "loop" and ttft[4].split()[5] == "loop"  # 64K x 16
    assert tok[8].split()[-2:] == ["564.0", "q"] and ttft[8].split()[-2:] == ["133", "q"]  # 1019K x 128, queued
    assert tok[7].split()[2] == "err" and tok[2].split()[7] == "cap"
    assert tok[3].split()[1:] == ["…"] * 8  # 32K: nothing measured, all Pending
    marks = text.split("marks:", 1)[1]
    for status in (st.QUEUED, st.OVER_CAPACITY, st.LOOPED, st.ERROR, st.PENDING):
        assert f"{MARKS[status][0]} {status}" in " ".join(marks.split())
    assert "! throttled" in marks and "TTFT" not in " ".join(tok)


def test_the_widest_figures_still_fit():
    """Every cell queued and throttled, with the longest figures the formats make (1234.6K tok/s, 123,456 ms)."""
    cells = {(L, C): Measurement(DECODE, L, C, st.QUEUED, "", total_tok_s=1_234_567.0, ttft_ms=123_456.0,
                                 throttled="throttled: hardware slowdown") for L in CONTEXTS for C in CONCURRENCY}
    grid = Grid(CONTEXTS, CONCURRENCY, cells)
    for figure in (lambda m: "1234.6K", lambda m: "123,456"):
        lines = grid_lines(grid, figure)
        assert len(lines) == 9 and max(map(len, lines)) <= WIDTH
        assert lines[1].split()[1:3] == [figure(None), "q!"]
    assert all(len(ln) <= WIDTH for ln in legend(grid))


def test_an_all_valid_matrix_has_no_legend():
    rec = eight_by_eight()
    grid = Grid((8192,), (1,), {(8192, 1): Measurement(DECODE, 8192, 1, st.VALID, "", total_tok_s=10.0, ttft_ms=5.0)})
    assert legend(grid) == [] and grid_lines(grid, lambda m: "10.0")[1].split() == ["8K", "10.0"]
    assert "marks:" in render_matrix(rec)
