"""The padding arithmetic, recomputed by hand, and the --sizes parser's one-line errors."""
from __future__ import annotations

import numpy as np
import pytest

from inproc.errors import UsageError
from inproc.graphs.padding import list_cost, padded_tokens, parse_sizes


def test_a_step_runs_the_next_size_or_no_graph_above_the_largest():
    counts = np.array([1, 3, 4, 5, 9, 17])
    assert padded_tokens(counts, (2, 4, 8, 16)).tolist() == [2, 4, 4, 8, 16, 17]
    assert padded_tokens(counts, ()).tolist() == counts.tolist()


def test_a_lists_cost_by_hand():
    counts = np.array([1, 3, 4, 5, 9, 17])
    times = np.array([0.1, 0.1, 0.1, 0.2, 0.3, 0.5])
    c = list_cost(counts, times, (2, 4, 8, 16, 32))
    # Padded: 2-1, 4-3, 4-4, 8-5, 16-9, 32-17 = 1+1+0+3+7+15.
    assert c.waste_tokens == 27 and c.tokens == 39 and c.waste_share == pytest.approx(27 / 66)
    assert c.eager_steps == 0 and c.unused == ()
    c = list_cost(counts, times, (2, 4, 8, 16, 32, 64))
    assert c.unused == (64,) and c.waste_tokens == 27
    c = list_cost(counts, times, (2, 4, 8, 16, 64))
    assert c.unused == () and c.waste_tokens == 1 + 1 + 0 + 3 + 7 + 47
    short = list_cost(counts, times, (4, 8))
    assert short.waste_tokens == 3 + 1 + 0 + 3 and short.eager_steps == 2
    assert short.eager_time_share == pytest.approx(0.8 / 1.3)
    weighted = list_cost(counts, times, (4, 8), weights=times)
    assert weighted.waste_weighted == pytest.approx(3 * 0.1 + 1 * 0.1 + 3 * 0.2)


def test_sizes_parse():
    assert parse_sizes("1,2,4,8") == (1, 2, 4, 8)
    assert parse_sizes("[1, 2, 768]") == (1, 2, 768)


@pytest.mark.parametrize("text, named", [("", "an empty size"), ("1,,4", "an empty size"), ("1,2.5", "'2.5'"),
                                         ("1,x", "'x'"), ("0,4", "'0'"), ("-2,4", "'-2'"), ("4,2", "2 follows 4"),
                                         ("2,2", "2 follows 2")])
def test_bad_sizes_are_one_line_naming_the_value(text, named):
    with pytest.raises(UsageError) as e:
        parse_sizes(text)
    assert named in str(e.value) and "\n" not in str(e.value) and "e.g. --sizes 1,2,4,8,16" in str(e.value)
