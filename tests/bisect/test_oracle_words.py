"""The oracle's notes in their exact words (``inproc.bisect.oracle.decide``) on the simulated runs of
tests/bisect/test_oracle.py: the interval's stated confidence is the look's, and a candidate called good is
above half the regression's lower bound, a slowdown factor under 1."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from inproc.bisect.looks import look_alpha
from inproc.bisect.oracle import GOOD, UNDECIDED, decide, reference
from tests.bisect.test_oracle import BASE_FORWARD_S, SETTINGS, SPREAD, doubled, runs

SHOWN = r"tok/s (\d\.\d{3})x the good revision's \((\d\.\d{3})–(\d\.\d{3}) at (\d+\.\d\d) %, look 2 of (\d+)\)"


def test_a_good_candidates_note_gives_its_interval_at_the_looks_confidence_and_the_half_way_mark():
    rng = np.random.default_rng(7)
    ref = doubled(rng)
    d = decide(ref, runs(rng, 4, forward_s=BASE_FORWARD_S), runs(rng, 2, forward_s=BASE_FORWARD_S), SPREAD, 2, SETTINGS)
    assert d.verdict == GOOD
    m = re.fullmatch(SHOWN + r": above half the regression's lower bound, (\d\.\d{3})x", d.note)
    assert m, d.note
    ratio, low, high, confidence, looks, mark = m.groups()
    assert float(low) <= float(ratio) <= float(high) and int(looks) == SETTINGS.max_pairs
    assert float(confidence) == pytest.approx(100 * (1 - look_alpha(2, SETTINGS.max_pairs, SETTINGS.call_alpha)), abs=0.006)
    # Half the regression's lower bound, as a tok/s factor: under 1, and nearer 1 than the regression itself.
    assert ref.change.ratio < float(mark) < 1.0
    assert float(mark) == pytest.approx(math.exp(-ref.at_least / 2), abs=0.0006)


def test_a_reference_whose_lower_bound_reaches_no_change_calls_nothing():
    rng = np.random.default_rng(7)
    same = reference(runs(rng, 3, forward_s=BASE_FORWARD_S), runs(rng, 3, forward_s=BASE_FORWARD_S), SPREAD, 2, SETTINGS)
    assert same.at_least <= 0
    d = decide(same, runs(rng, 4, forward_s=BASE_FORWARD_S), runs(rng, 2, forward_s=2 * BASE_FORWARD_S), SPREAD, 2,
               SETTINGS)
    assert d.verdict == UNDECIDED
    assert re.fullmatch(SHOWN + r": on the runs as they are now the regression's lower bound reaches no change "
                                r"\(the machine moved since it was called\): not called", d.note), d.note
