"""SGLang's two event loops, each stepped the way SGLang runs it: one cell on each, for real.

A process holds one SGLang scheduler at a time (the session engine runs the overlap loop),
so each cell runs through the real CLI in a child process and is read back from its file.
"""
from __future__ import annotations

import numpy as np
import pytest

from inproc.measure import metrics as m
from inproc.measure.judge import QUEUED_ACTIVE_FRACTION
from inproc.record.io import load_results
from tests.engines.sglang.conftest import PROFILE, needs_sglang
from tests.spawn import run_inproc

pytestmark = [needs_sglang, pytest.mark.engine]  # every test here starts `python -m inproc`


@pytest.mark.parametrize("loop, sets, lag", [("overlap", [], 1), ("normal", ["--set", "disable-overlap-schedule=true"], 0)])
def test_a_cell_on_each_loop_counts_every_token(loop, sets, lag, tmp_path):
    out = tmp_path / "r.json"
    p = run_inproc("cell", str(PROFILE), "--context", "256", "--concurrency", "3", "--window-steps", "24", "--max-output", "8",
                   "--prompt-mode", "distinct", "--seed", "4", *sets, "--out", str(out))
    assert p.returncode == 0, p.stderr[-3000:]
    rec = load_results(out)
    assert rec.engine.settings.event_loop == loop
    (cell,) = rec.decode
    trace, w = cell.trace, m.window(cell.trace)
    assert trace.window_open_reason == "all 3 requests decoding"
    rows = np.arange(w.first_step, w.last_step + 1)
    # Each step returns the batch it formed (normal) or the one before (overlap). On the overlap
    # loop a step right after an idle one returns nothing: there was no batch before it.
    returned = np.zeros(len(trace.steps), dtype=int)
    for r in trace.requests:
        np.add.at(returned, np.asarray(r.token_steps, dtype=int), 1)
    of = trace.steps.output_of[rows]
    assert ((of == rows - lag) | ((of == -1) & (returned[rows] == 0))).all(), list(zip(rows, of, returned[rows]))
    assert (of == rows - lag).mean() > 0.6
    finished = [r for r in trace.requests if r.finish_reason == "length"]
    assert len(finished) >= 3 and all(r.num_tokens == 8 for r in finished)  # refilled, every token there
    # The window's tokens are exactly what its steps returned, as the engine counted them.
    in_window = trace.counters_end.generation_tokens - trace.counters_start.generation_tokens
    assert cell.figures.output_tokens == in_window > 0
    # Three requests (max-running 8) stayed in flight, refills included: nothing waited, so Valid.
    fig = cell.figures
    assert fig.max_waiting == 0 and fig.preemptions == 0
    assert QUEUED_ACTIVE_FRACTION * 3 <= fig.avg_active <= 3 + 1e-9, fig.avg_active  # a time-weighted mean of counts up to 3
    assert (cell.status, cell.reason) == ("Valid", ""), cell.reason
