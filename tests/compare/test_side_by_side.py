"""Two engines on one grid: real vLLM and SGLang runs of the same tiny matrix, shown side by side, never judged."""
from __future__ import annotations

from dataclasses import replace

import pytest

from inproc.compare.side_by_side import FIGURES, side_by_side, two_engines
from inproc.errors import UsageError
from inproc.record.io import load_results
from tests.conftest import FIXTURES

HERE = FIXTURES / "compare"
VLLM, SGLANG = load_results(HERE / "engines-vllm.json"), load_results(HERE / "engines-sglang.json")


def test_each_engines_figures_are_its_cells_own():
    assert two_engines([VLLM], [SGLANG]) and not two_engines([VLLM], [VLLM])
    c = side_by_side([VLLM], [SGLANG])
    assert c.exit_code == 0 and (c.base_engine, c.new_engine) == ("vllm 0.32.0", "sglang 0.5.23")
    assert [x.key for x in c.cells] == ["256x1", "256x4", "1024x1", "1024x4"]
    labels = [label for label, _, _ in FIGURES]
    for cell in c.cells:
        ev, es = (next(e for e in r.decode if e.key == cell.key) for r in (VLLM, SGLANG))
        assert (cell.base_status, cell.new_status) == (ev.status, es.status)
        pairs = {p.label: p for p in cell.figures}
        assert list(pairs) == labels
        assert pairs["Total tok/s"].base == ev.figures.total_tok_s and pairs["Total tok/s"].new == es.figures.total_tok_s
        assert pairs["TTFT"].ratio == pytest.approx(es.figures.ttft_ms / ev.figures.ttft_ms)
        assert pairs["Host share"].new == es.figures.anatomy.host_overhead
    # The engines' own keys differ by design and are listed, not refused.
    keys = {d.key for d in c.differences}
    assert {"engine.name", "engine.version", "profile.engine_args.max-num-seqs",
            "profile.engine_args.max-running-requests"} <= keys


def test_another_grid_is_refused_with_the_key_named():
    other = replace(SGLANG, plan=replace(SGLANG.plan, settings=replace(SGLANG.plan.settings, window_s=2.0)))
    with pytest.raises(UsageError, match=r"plan\.window_s \(1\.0 vs 2\.0\) differ.*--allow-different plan\.window_s"):
        side_by_side([VLLM], [other])
    assert side_by_side([VLLM], [other], allow=("plan.window_s",)).exit_code == 0


def test_several_runs_are_averaged_and_a_cell_on_one_side_only_is_shown():
    fewer = replace(SGLANG, decode=SGLANG.decode[:2])
    c = side_by_side([VLLM, VLLM], [fewer])
    last = c.cells[-1]
    assert last.key == "1024x4" and last.new_status == "" and all(p.new is None for p in last.figures)
    first = next(p for p in c.cells[0].figures if p.label == "Total tok/s")
    assert first.base == pytest.approx(VLLM.decode[0].figures.total_tok_s) and c.base_runs == 2
