"""Step-anatomy figures on a hand-made step trace: every expected value worked out by hand."""
from __future__ import annotations

import numpy as np
import pytest

from inproc.measure import anatomy as an
from inproc.measure.metrics import Window
from inproc.measure.steps import StepRecorder, StepTrace
from inproc.types import GRAPH_MODES, BatchShape, ForwardStats, StepResult

FULL, PIECEWISE, NONE = (GRAPH_MODES.index(x) for x in ("FULL", "PIECEWISE", "NONE"))


def _trace() -> StepTrace:
    # Five steps of 10 ms (the last is outside the window); batches of 4, 4, 3, 6 requests.
    return StepTrace.of(
        t_start_s=[0.00, 0.01, 0.02, 0.03, 0.04], t_end_s=[0.01, 0.02, 0.03, 0.04, 0.05],
        schedule_s=[0.001] * 5, update_s=[0.0005] * 5,
        num_running=[4, 4, 3, 6, 6], num_waiting=[0] * 5, num_scheduled_tokens=[4, 4, 3, 6, 6],
        num_preempted=[0, 1, 0, 0, 0],
        num_prefill_reqs=[0, 0, 0, 1, 0], num_prefill_tokens=[0, 0, 0, 3, 0],
        num_decode_reqs=[4, 4, 3, 5, 6], num_decode_tokens=[4, 4, 3, 5, 6],
        graph_mode=[FULL, FULL, FULL, NONE, FULL], num_unpadded_tokens=[4, 4, 3, 8, 6],
        num_padded_tokens=[4, 4, 4, 8, 8],
        read_bytes=[1e9] * 5, write_bytes=[1e6] * 5, flops=[2e9] * 5,
    )


W = Window(open_s=0.0, close_s=0.04, first_step=0, last_step=3)


def test_coverage_padding_histogram_by_hand():
    s = _trace()
    assert an.graph_step_share(s, W) == {"FULL": 0.75, "NONE": 0.25}
    # Tokens 4 + 4 + 3 in FULL, 8 in NONE: 11 / 19 and 8 / 19.
    assert an.graph_token_share(s, W) == pytest.approx({"FULL": 11 / 19, "NONE": 8 / 19})
    # Padded 4 + 4 + 4 + 8 = 20, unpadded 19: one token in twenty was padding.
    assert an.padding_waste(s, W) == pytest.approx(1 / 20)
    assert an.batch_size_histogram(s, W) == {3: 1, 4: 2, 6: 1}
    assert an.preemptions(s, W) == 1 and an.scheduled_tokens(s, W) == 17


def test_bandwidth_flops_host_by_hand():
    s = _trace()
    assert an.step_time_s(s, W) == pytest.approx(0.04)
    assert an.achieved_bandwidth(s, W) == pytest.approx(4 * (1e9 + 1e6) / 0.04)
    assert an.achieved_flops(s, W) == pytest.approx(4 * 2e9 / 0.04)
    assert an.host_overhead_fraction(s, W) == pytest.approx(4 * 0.0015 / 0.04)
    f = an.anatomy_figures(s, W, peak_bandwidth=4.8e12, peak_flops=None)
    assert f.bandwidth_peak_fraction == pytest.approx(4 * (1e9 + 1e6) / 0.04 / 4.8e12)
    assert f.flops_peak_fraction is None and f.flops_per_s == pytest.approx(2e11)


def test_unreported_columns_give_no_figure():
    s = StepTrace.of(t_start_s=[0.0, 0.01], t_end_s=[0.01, 0.02], num_running=[2, 2], num_waiting=[0, 0],
                     num_scheduled_tokens=[2, 2], num_preempted=[0, 0])
    w = Window(0.0, 0.02, 0, 1)
    assert an.graph_step_share(s, w) == {} and an.padding_waste(s, w) is None
    assert an.achieved_bandwidth(s, w) is None and an.host_overhead_fraction(s, w) is None
    assert an.batch_size_histogram(s, w) == {2: 2}  # the running count stands in for the shape
    assert s.output_of.tolist() == [0, 1]  # without the column, steps were synchronous


def test_recorder_files_a_lagged_forward_under_the_step_that_formed_it():
    rec = StepRecorder()
    shape = BatchShape(0, 0, 2, 2)
    first = StepResult((), 2, 0, 2, batch=shape, returned_lag=-1)
    second = StepResult((), 2, 0, 2, batch=shape, returned_lag=1,
                        forward=ForwardStats("FULL", 2, 4, 1.0, 2.0, 3.0), schedule_s=0.5)
    rec.append(0.0, 1.0, first)
    rec.append(1.0, 2.0, second)
    s = rec.freeze()
    assert s.output_of.tolist() == [-1, 0]
    assert s.graph_mode.tolist() == [FULL, -1] and s.num_padded_tokens.tolist() == [4, -1]
    assert s.read_bytes[0] == 2.0 and np.isnan(s.read_bytes[1]) and s.schedule_s[1] == 0.5


