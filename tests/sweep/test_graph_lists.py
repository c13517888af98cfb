"""``inproc sweep --graph-sizes``: the lists read, turned into variants, and set side by side from the
variants' results files (synthetic records whose counts are known; no engine)."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from inproc import engines
from inproc.errors import UsageError
from inproc.render.sweep.formats import render_sweep_markdown
from inproc.render.sweep.page import render_sweep_html
from inproc.sweep.graph_lists import graph_variants, parse_graph_sizes
from inproc.sweep.manifest import DONE, Sweep, SweepPlan, VariantRun, load_sweep, write_sweep
from inproc.sweep.plan import parse_varies, plan_variants
from inproc.sweep.summary import summarize
from tests.graphs import synthetic

SETS = engines.get("vllm").graph_size_sets


def _sizes_file(path, lists):
    path.write_text(json.dumps({"kind": "inproc-graph-sizes", "version": 1, "engine": "vllm", "results": [],
                                "weight": "tokens", "budget": 3, "lists": [{"name": n, "sizes": s} for n, s in lists]}))
    return path


def test_the_forms_of_graph_sizes(tmp_path):
    f = _sizes_file(tmp_path / "s.json", [("captured", [2, 4, 8]), ("sizes-1", [3]), ("suggested", [3, 5, 9])])
    assert [n.name for n in parse_graph_sizes(str(f))] == ["captured", "sizes-1", "suggested"]
    picked = parse_graph_sizes(f"{f}:suggested,captured")
    assert [(n.name, n.sizes) for n in picked] == [("suggested", (3, 5, 9)), ("captured", (2, 4, 8))]
    given = parse_graph_sizes("captured,[1,2,4],[8, 16]")
    assert [(n.name, n.sizes) for n in given] == [("captured", ()), ("list-2", (1, 2, 4)), ("list-3", (8, 16))]


@pytest.mark.parametrize("text, named", [("", "Empty --graph-sizes"), ("suggested", "'suggested'"),
                                         ("[4,2]", "2 follows 4"), ("[1,x]", "'x'"), ("captured,captured", "given twice")])
def test_bad_graph_sizes_are_one_line(text, named):
    with pytest.raises(UsageError) as e:
        parse_graph_sizes(text)
    assert named in str(e.value) and "\n" not in str(e.value)


def test_a_missing_list_of_a_file_names_the_lists_it_has(tmp_path):
    f = _sizes_file(tmp_path / "s.json", [("captured", [2]), ("suggested", [3])])
    with pytest.raises(UsageError, match=r"has no list 'best'\. Its lists: captured, suggested"):
        parse_graph_sizes(f"{f}:best")


def test_lists_cross_the_vary_variants_lists_slowest():
    lists = parse_graph_sizes("captured,[4,8]")
    varied = plan_variants(parse_varies(("max-num-seqs=4,8",)))
    vs = graph_variants(lists, SETS, varied)
    assert [v.name for v in vs] == ["captured max-num-seqs=4", "captured max-num-seqs=8",
                                    "list-2 max-num-seqs=4", "list-2 max-num-seqs=8"]
    assert vs[2].sets == ("compilation-config.cudagraph_capture_sizes=[4,8]",
                          "compilation-config.max_cudagraph_capture_size=8", "max-num-seqs=4")
    assert vs[0].sets == ("max-num-seqs=4",) and vs[0].file == "01-captured_max-num-seqs=4.json"
    alone = graph_variants(lists, SETS, ())
    assert [(v.name, v.label) for v in alone] == [("captured", "captured"), ("list-2", "list-2")]


def test_the_lists_side_by_side_from_the_variants_files(tmp_path):
    """Two variants' results: the captured list (2,4,8) and a suggested one (3,5,9), on steps with known counts."""
    counts = {(256, 2): np.array([2, 2, 3, 4, 5] * 8), (256, 4): np.array([4, 7, 8, 8, 9] * 8)}
    lists = parse_graph_sizes("[2,4,8],[3,5,9]")
    variants = graph_variants(lists, SETS, ())
    for v, g in zip(variants, lists):
        synthetic.write(tmp_path / v.file, synthetic.record(counts, g.sizes, memory_bytes=2**30 * len(g.sizes)))
    plan = SweepPlan("/p.toml", "p", "vllm", (), False, (), 1, {}, tuple((g.name, g.sizes) for g in lists))
    sweep = Sweep(plan, tuple(VariantRun(v, DONE) for v in variants), "inproc sweep", time.strftime("%Y-%m-%d"))
    write_sweep(tmp_path, sweep)
    assert load_sweep(tmp_path) == sweep  # tags and lists round-trip
    g = summarize(load_sweep(tmp_path), tmp_path).graphs
    first, second = g.lists
    # By hand over the 80 steps: (2,4,8) pads 8 × (1 + 3) + 8 × 1 = 40, nine steps above 8 run eager;
    # (3,5,9) pads 8 × (1 + 1 + 1 + 1 + 2 + 1 + 1) = 64.
    assert (first.modelled.waste_tokens, first.modelled.eager_steps, second.modelled.waste_tokens) == (40, 8, 64)
    assert first.recorded_padded == 40 and second.recorded_padded == 64  # what each engine recorded
    assert first.check.agree == first.check.checked == 80 and first.memory_bytes == 3 * 2**30
    assert not g.none_captured and [c.statuses for c in g.cells] == [("Valid", "Valid")] * 2
    ratio = g.cells[0].ratios[1]
    assert ratio.ratio == pytest.approx(1.0, abs=0.05) and ratio.within.low <= ratio.ratio <= ratio.within.high
    md = render_sweep_markdown(summarize(sweep, tmp_path))
    assert "## CUDA-graph lists side by side" in md and "| list-1 (done) | 2,4,8 | 2,4,8 | 40 | 40 | 80 of 80 steps" in md
    assert "No list was captured" not in md
    assert "CUDA-graph lists side by side" in render_sweep_html(summarize(sweep, tmp_path))
