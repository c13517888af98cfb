"""A column added to a subject's view shows in every format with no other change (the CUDA-graphs and compare
subjects).

The claim docs/layout.md makes: a new column is one head and one value in the view
(``inproc/render/graphs/view.py``). Wrong code this catches: an arrangement or writer that keeps
its own copy of the head or builds its own rows (a format module importing ``LIST_HEAD`` by value,
a writer with a fixed column count), which would leave the column out of that format.
"""
from __future__ import annotations

import numpy as np
import pytest

from inproc.graphs.analysis import Options, analyse
from inproc.graphs.cost import capture_cost
from inproc.graphs.steps import read_run
from inproc.record.io import load_results
from inproc.compare.verdicts import compare_runs
from inproc.render.compare import formats as compare_formats
from inproc.render.compare import page
from inproc.render.compare import view as compare_view
from inproc.render.graphs import formats, section, view
from tests.conftest import FIXTURES
from tests.graphs import synthetic

HEAD, VALUE = "padded per step", "padded-per-step-value"


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    counts = {(256, 2): np.array([2, 2, 3, 4, 5] * 4), (256, 4): np.array([4, 7, 8, 8, 9] * 4)}
    path = synthetic.write(tmp_path_factory.mktemp("w") / "r.json", synthetic.record(counts, (2, 4, 8)))
    return load_results(path)


def test_a_column_in_the_view_reaches_every_format(rec, monkeypatch):
    monkeypatch.setattr(view, "LIST_HEAD", [*view.LIST_HEAD, HEAD])
    plain = view.list_row
    monkeypatch.setattr(view, "list_row", lambda r, weight: [*plain(r, weight), VALUE])
    a = analyse((read_run(rec, "r.json"),), capture_cost(rec, (2, 4, 8)), Options(sizes=((3, 9),)))
    v = view.graphs_view(a)
    outputs = {"md": formats.markdown(v), "text": formats.text(v), "html": formats.html(v),
               "report md": section.graphs_markdown(rec, ((3, 9),)), "report html": section.graphs_html(rec, ((3, 9),))}
    for name, out in outputs.items():
        assert HEAD in out, name
        assert out.count(VALUE) == len(a.lists), name  # one value per list: captured and --sizes 3,9


def test_a_compare_column_in_the_view_reaches_every_format(monkeypatch):
    """``inproc compare``'s text, Markdown and HTML page: one head in ``COLUMNS``, one value in ``row_cells``."""
    monkeypatch.setattr(compare_view, "COLUMNS", [*compare_view.COLUMNS, HEAD])
    plain = compare_view.row_cells
    monkeypatch.setattr(compare_view, "row_cells", lambda r: [*plain(r), VALUE])
    base, new = (load_results(FIXTURES / "compare" / f"run-{i}.json") for i in (1, 2))
    c = compare_runs([base], [new])
    v = compare_view.compare_view(c)
    outputs = {"text": compare_formats.text(v), "md": compare_formats.markdown(v),
               "html": page.html(v, [base], [new], "run-1.json", "run-2.json")}
    changed = sum(r.change for r in v.rows)
    for name, out in outputs.items():
        assert HEAD in out, name
        assert out.count(VALUE) == len(c.rows) + (changed if name == "md" else 0), name  # md: the changes again
