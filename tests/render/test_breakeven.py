"""The where-speculation-pays section, break-even.json and break-even.csv carry the same rows; the chart draws
one curve per concurrency with the break-even interval shaded.

Wrong code this catches: a CSV or JSON row from another cell or point, the base drawn as a speculative
point, a chart without a curve per concurrency or without the band.
"""
from __future__ import annotations

import csv
import io
import json

import pytest

from inproc.render.sweep import data as rb
from inproc.render.sweep.breakeven import context_chart, pays_view
from inproc.render.sweep.formats import pays_markdown
from inproc.render.sweep.page import pays_section
from inproc.sweep.pays import SpecPoint, cell_pays


def _cell(c: int, slope: float):
    base = SpecPoint(1, "no speculation", None, 1000.0, 5.0, 8, 10.0)
    spec = [SpecPoint(i + 2, f"k={i}", a, slope * a, 5.0, 8, 1000 / (slope * a)) for i, a in enumerate((1.5, 2.5, 3.5))]
    return cell_pays(256, c, base, spec, (), 2.0)


def test_the_three_outputs_carry_the_same_rows():
    pays = (_cell(1, 400.0), _cell(8, 300.0))
    data = json.loads(json.dumps(rb.break_even_json(pays)))
    rows = list(csv.DictReader(io.StringIO(rb.break_even_csv(pays))))
    md = "\n".join(pays_markdown(pays_view(pays)))
    assert len(rows) == sum(len(c["points"]) for c in data["cells"]) == 8
    for cell, p in zip(data["cells"], pays):
        assert cell["break_even"] == pytest.approx(p.break_even.length) and cell["verdict"] == p.break_even.verdict
        assert cell["points"][0]["speculative"] is False and all(q["speculative"] for q in cell["points"][1:])
        mine = [r for r in rows if int(r["Requests at once"]) == p.concurrency]
        assert [float(r["Break-even length"]) for r in mine] == pytest.approx([p.break_even.length] * 4)
        assert [r["Acceptance length"] for r in mine] == ["", "1.5", "2.5", "3.5"]
        assert f"pays above {p.break_even.length:.2f} [{p.break_even.low:.2f}, {p.break_even.high:.2f}]" in md
    assert data["cells"][0]["break_even"] == pytest.approx(2.5, abs=0.01)  # 400 a = 1000
    assert data["cells"][0]["speedup"]["ratio"] == pytest.approx(0.8, rel=1e-3)  # 400 · 2 ÷ 1000


def test_the_chart_draws_a_curve_per_concurrency_and_shades_each_break_even():
    pays = [_cell(1, 400.0), _cell(8, 300.0)]
    chart = context_chart(256, pays)
    assert [s.name for s in chart.series] == ["C = 1", "C = 8", "no speculation (1×)"]
    assert chart.series[0].ys == pytest.approx([0.6, 1.0, 1.4])
    assert [(round(lo, 2) <= p.break_even.length <= round(hi, 2) + 0.01) for (lo, hi), p in zip(chart.bands, pays)] == [True, True]
    assert "<svg" in "".join(pays_section(pays_view(tuple(pays))))
    assert pays_section(pays_view(())) == []
