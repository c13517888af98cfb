"""Tail or typical step: the rule on synthetic step rows whose truth is known, and the diagnosis that quotes it."""
from __future__ import annotations

import math

import numpy as np

from inproc.history.diagnose import diagnose
from inproc.history.tail import STEADY, TAIL, TAIL_SHARE, TYPICAL, UNCHANGED, tail_split
from inproc.measure import anatomy as an
from inproc.measure.metrics import Window
from inproc.measure.slow import slow_figures
from inproc.measure.steps import StepTrace
from inproc.record.compact import CellAnatomy
from tests.measure.test_slow import N, rows, slow_down


def anatomy(c: dict) -> CellAnatomy:
    """The window's anatomy as the diagnosis reads it: its mean step time and slow-step figures, from the rows."""
    steps = StepTrace.of(**c)
    w = Window(float(c["t_start_s"][0]), float(c["t_end_s"][-1]), 0, N - 1)
    return CellAnatomy(steps=N, window_s=w.length_s, output_tokens=4 * N, step_s=an.step_time_s(steps, w) / N,
                       host_s=None, slow=slow_figures(steps, w))


def tail_grown(seed: int) -> dict:
    """Five steps made 20× slower, every other step as it was."""
    c = rows(seed=seed)
    dur = c["t_end_s"] - c["t_start_s"]
    for row in (20, 60, 100, 140, 180):
        slow_down(c, row, 19 * float(dur[row]))
    return c


def all_slower(seed: int, by: float = 0.10) -> dict:
    """Every step 10 % slower (the gaps between steps unchanged)."""
    c = rows(seed=seed)
    dur = c["t_end_s"] - c["t_start_s"]
    gap = np.diff(c["t_start_s"]) - dur[:-1]
    dur = dur * (1 + by)
    c["t_start_s"] = np.concatenate([[0.0], np.cumsum(dur[:-1] + gap)])
    c["t_end_s"] = c["t_start_s"] + dur
    return c


def test_only_the_tail_grew():
    base, new = anatomy(rows(seed=1)), anatomy(tail_grown(seed=2))
    assert base.slow.count == 0 and new.slow.count == 5
    s = tail_split([base], [new])
    assert s.where == TAIL and s.tail_share > TAIL_SHARE
    assert s.tail_share > 0.9  # the median did not move: nearly all the change is the five steps
    assert math.isclose(s.new.median_s, s.base.median_s, rel_tol=0.01)
    line = diagnose([base], [new], "tok_s", (base.step_s / new.step_s))
    assert line.startswith("step time +") and "; in the tail: slow steps 0 → 5 (0.0 % →" in line


def test_every_step_slower_is_the_typical_step():
    base, new = anatomy(rows(seed=1)), anatomy(all_slower(seed=2))
    s = tail_split([base], [new])
    assert s.where == TYPICAL and s.tail_share <= TAIL_SHARE
    assert math.isclose(s.new.median_s / s.base.median_s, 1.10, rel_tol=0.01)
    assert base.slow.count == new.slow.count == 0
    line = diagnose([base], [new], "tbt", new.step_s / base.step_s)
    assert line.startswith("step time +10 %") and "; in the typical step: median step time 10 → 11 ms" in line


def test_nothing_changed():
    base, new = anatomy(rows(seed=1)), anatomy(rows(seed=2))
    s = tail_split([base], [new])
    assert s.where == UNCHANGED and s.tail_share is None
    assert abs(s.change_s) < STEADY * s.base.mean_s
    assert "mean step time unchanged" in diagnose([base], [new], "tok_s", 1.06)


def test_the_terms_add_up_to_the_mean_and_runs_are_averaged():
    runs = [anatomy(tail_grown(seed=k)) for k in (3, 4)]
    s = tail_split([anatomy(rows(seed=1))], runs)
    for side in (s.base, s.new):
        assert math.isclose(side.median_s + side.excess_s + side.rest_s, side.mean_s, rel_tol=1e-12)
    assert math.isclose(s.new.mean_s, np.mean([a.step_s for a in runs]), rel_tol=1e-12)
    dur = tail_grown(seed=3)["t_end_s"] - tail_grown(seed=3)["t_start_s"]  # the excess, from the rows themselves
    med = np.median(dur)
    assert math.isclose(runs[0].slow.excess_ms / 1e3, float(np.sum(dur[dur > 5 * med] - med)) / N, rel_tol=1e-9)


def test_no_split_without_slow_figures_on_both_sides():
    base = anatomy(rows(seed=1))
    old = CellAnatomy(steps=N, window_s=base.window_s, output_tokens=4 * N, step_s=base.step_s, host_s=None)
    assert tail_split([old], [base]) is None and tail_split([base], []) is None
    assert not any(x in diagnose([old], [base], "tok_s", 0.9) for x in ("in the t", "mean step time"))


def test_ttft_gets_no_split():
    base, new = anatomy(rows(seed=1)), anatomy(tail_grown(seed=2))
    assert "in the tail" not in diagnose([base], [new], "ttft", 1.3)


def test_compare_json_carries_where_the_step_time_moved():
    import json

    from inproc.compare.verdicts import SLOWER, Row
    from inproc.history.explain import Explained
    from inproc.render.compare.formats import render_diagnoses

    base, new = anatomy(rows(seed=1)), anatomy(tail_grown(seed=2))
    split = tail_split([base], [new])
    row = Row(256, 4, "tok_s", SLOWER)
    doc = json.loads(render_diagnoses([Explained(row, diagnose([base], [new], "tok_s", 0.7), split)], "json"))
    (d,) = doc["diagnoses"]
    assert d["step_change"] == TAIL and d["tail_share"] == split.tail_share and "in the tail" in d["diagnosis"]
    assert "in the tail" in render_diagnoses([Explained(row, diagnose([base], [new], "tok_s", 0.7), split)], "md")


def test_a_compact_anatomy_keeps_the_slow_figures_and_old_ones_load_without():
    a = anatomy(tail_grown(seed=2))
    again = CellAnatomy.from_dict(a.to_dict())
    assert again.slow == a.slow and again.slow.excess_ms > 0
    old = a.to_dict()
    del old["slow"]
    assert CellAnatomy.from_dict(old).slow is None
