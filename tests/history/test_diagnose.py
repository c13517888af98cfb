"""The diagnosis as a function of two groups of step anatomies: ranking, shares, named facts, the unexplained case."""
from __future__ import annotations

import math

from inproc.history.diagnose import causes, diagnose
from inproc.record.compact import BatchTimes, CellAnatomy


def anatomy(step_ms: float, host_ms: float, graph: str = "FULL", tokens: int = 640, clock: float = 1980.0,
            steps: int = 10) -> CellAnatomy:
    """A window of ``steps`` decode steps at batch 64 (one token per request per step)."""
    step_s, host_s = step_ms / 1e3, host_ms / 1e3
    return CellAnatomy(steps=steps, window_s=steps * step_s / 0.99, output_tokens=tokens, step_s=step_s, host_s=host_s,
                       graph_step_share={graph: 1.0}, padding_waste=0.0,
                       batch_times=(BatchTimes(64, steps, step_s, host_s),), kv_blocks=4096, sm_clock_mhz=clock)


def test_a_graph_mode_change_reads_like_the_issue_line():
    base, new = [anatomy(10.0, 1.0), anatomy(10.2, 1.0)], [anatomy(11.5, 1.0, graph="PIECEWISE")]
    ratio = (640 / (11.5e-3 * 10 / 0.99)) / (640 / (10.1e-3 * 10 / 0.99))  # tok/s new ÷ base, as measured here
    line = diagnose(base, new, "tok_s", ratio)
    assert line.startswith("forward time per step +15 % (9.1 → 10.5 ms, batch 64), 100 % of the change")
    assert "steps ran PIECEWISE 100 % (was FULL 100 %)" in line
    assert line.endswith("host share unchanged; clocks unchanged")


def test_shares_add_up_to_the_change_and_rank_the_larger_first():
    base, new = [anatomy(10.0, 1.0)], [anatomy(12.0, 2.5, tokens=600)]  # forward +0.5 ms, host +1.5 ms, fewer tokens
    tok_s = lambda a: a.output_tokens / a.window_s
    ratio = tok_s(new[0]) / tok_s(base[0])
    found = causes(base, new, "tok_s", ratio)
    assert [c.text.split(" ")[0] for c in found] == ["host", "tokens", "forward"]  # 0.137, 0.065, 0.046 in log
    assert math.isclose(sum(c.share for c in found), 1.0, rel_tol=1e-9)  # busy share did not move
    assert math.isclose(found[0].share, math.log(10 / 12) * 0.75 / math.log(ratio), rel_tol=1e-12)


def test_nothing_moved_is_unexplained():
    base, new = [anatomy(10.0, 1.0)], [anatomy(10.0, 1.0)]
    assert diagnose(base, new, "tok_s", 0.9) == "unexplained by the step records (host share unchanged; clocks unchanged)"
    clocked = diagnose(base, [anatomy(10.0, 1.0, clock=1500.0)], "ttft", 1.2)
    assert clocked.startswith("in the decode window after it: SM clock 1500 MHz (was 1980 MHz, −24 %)")


def test_kernel_passes_on_every_night_name_the_category_the_change_sits_in():
    import numpy as np
    from dataclasses import replace
    from tests.sim.kernels import PassSettings, simulate_runs

    rng = np.random.default_rng(3)
    before = [replace(anatomy(10.0, 1.0), kernels=k) for k in simulate_runs(PassSettings(), 4, rng)]
    after = [replace(anatomy(11.5, 1.0), kernels=k) for k in simulate_runs(PassSettings(plant="gemm", plant_ms=1.5), 2, rng)]
    ratio = 10.0 / 11.5
    line = diagnose(before, after, "tok_s", ratio)
    assert line.startswith("forward time per step +17 %") and "; the change sits in gemm: +1." in line
    assert "(4 and 2 runs)" in line
    clean = [replace(anatomy(11.5, 1.0), kernels=k) for k in simulate_runs(PassSettings(), 2, rng)]
    assert "no kernel category moved beyond its noise" in diagnose(before, clean, "tok_s", ratio)
    # A night without a kernel pass: nothing said of kernels.
    assert "kernel" not in diagnose(before, [anatomy(11.5, 1.0)], "tok_s", ratio)
    assert "kernel" not in diagnose(before, after, "ttft", 1.2)  # TTFT is before the window's steps


def test_a_change_in_acceptance_length_is_named_as_a_cause():
    from dataclasses import replace

    def spec(length: float, rate: float, tokens: int):
        return replace(anatomy(10.0, 1.0, tokens=tokens), spec_mean_acceptance_length=length, spec_acceptance_rate=rate)

    base, new = [spec(2.6, 0.53, 1664)], [spec(2.1, 0.37, 1344)]  # fewer tokens per verify step, same step time
    ratio = 1344 / 1664
    line = diagnose(base, new, "tok_s", ratio)
    # Would fail: the length not carried in the compact anatomy, or only the rate's points named.
    assert "spec acceptance length 2.10 (was 2.60, −19 %)" in line
    assert "spec acceptance length" not in diagnose([spec(2.6, 0.53, 1664)], [spec(2.65, 0.55, 1690)], "tok_s", 1690 / 1664)
