"""One run against one run with no stated spread: the spread a change would need to be noise, held against a maximum.

One run cannot show how much a whole run varies, but it can say how much runs would have
to vary for the change to be noise. With a run-to-run spread σ (the log standard deviation
of one run's figure), the log ratio of two single runs has the standard error
√(s_w² + 2σ²), s_w the within-run standard error (the block bootstrap's interval, on the
side toward no change, ÷ its normal quantile). The change c is noise at the row's level
while |c| ≤ z·√(s_w² + 2σ²), so the **needed spread** is

    σ_need = √(max(0, (|c| ÷ z)² − s_w²) ÷ 2)

with z the normal quantile of 1 − α/(2m): the comparison's alarm rate α
(``spread.NIGHT_ALPHA``) shared by its m rows judged this way (Bonferroni), so that a
clean pair whose runs vary by at most the maximum raises an alarm with chance at most α
however many rows it has. A row is an alarm when σ_need exceeds the stated plausible
maximum ``--max-spread`` (:data:`MAX_SPREAD`); it is then the test at that spread, and
compare's threshold with its confidence decides slower or faster, as for any row. This
is asv's ``--factor`` (a change beyond a stated factor is a change) with the factor
derived from a spread and the row's own within-run noise.

Why 25 % (docs/statistics.md#one-run-against-one-run-the-spread-a-change-needs): the
largest clean run-to-run spread measured on this project's contended 2-core machine is
16.6 % (log sd, a bisect's good runs), 5-10 % typical; GPU runners vary by 1-2 % a run
with 30 s windows, a nightly LLM-serving suite alerts at 10 % and sees 10-20 % on its
flakiest cases (neuralmagic/nm-vllm#156), and GPUs of one model differ by 8 % on average
(Sinha et al., SC'22). 25 % lies above all of them, and a change of several times (what
another program's load makes) lies far beyond it.
"""
from __future__ import annotations

import math

from inproc.compare.spread import NIGHT_ALPHA, ChangeTest, t_quantile, t_sf
from inproc.compare.stats import Interval

#: The plausible maximum of one run's run-to-run spread (log sd) when none is stated: the module's reason.
MAX_SPREAD = 0.25


def row_z(rows: int, alpha: float = NIGHT_ALPHA) -> float:
    """z of one row among ``rows`` judged by the bound: the normal quantile of 1 − α/(2·rows)."""
    return t_quantile(1 - alpha / (2 * max(rows, 1)), math.inf)


def within_se(ratio: float, within: Interval, confidence: float) -> float:
    """The within-run standard error of the log ratio: the interval's half-width toward no change ÷ its quantile."""
    centre = math.log(ratio)
    half = math.log(within.high) - centre if centre < 0 else centre - math.log(within.low)
    return max(half, 0.0) / t_quantile((1 + confidence) / 2, math.inf)


def needed_spread(log_ratio: float, se_within: float, z: float) -> float:
    """σ_need: the smallest run-to-run spread (log sd) under which the change is within the row's noise band."""
    return math.sqrt(max(0.0, (abs(log_ratio) / z) ** 2 - se_within ** 2) / 2)


def bound_test(ratio: float, within: Interval, confidence: float, max_spread: float,
               rows: int) -> tuple[ChangeTest, float, bool]:
    """(the test at the maximum spread, σ_need, alarm): the alarm is σ_need > ``max_spread``, i.e. p ≤ α/rows."""
    c, sw, z = math.log(ratio), within_se(ratio, within, confidence), row_z(rows)
    se = math.hypot(sw, math.sqrt(2) * max_spread)
    p = min(1.0, 2 * t_sf(abs(c) / se, math.inf)) if se > 0 else (0.0 if c else 1.0)
    need = needed_spread(c, sw, z)
    return ChangeTest(c, se, math.inf, p, confidence), need, need > max_spread


def needed_text(need: float, max_spread: float) -> str:
    """What a row judged by the bound rests on, in words: the spread the change needs against the maximum."""
    most = f"--max-spread {max_spread * 100:g} %"
    if need <= 0:
        return f"within the runs' own noise ({most})"
    if need > max_spread:
        return f"noise only if runs varied by {_pct(need)} or more, beyond {most}"
    return f"within {most}: noise if runs varied by {_pct(need)} or more"


def _pct(x: float) -> str:
    return f"{x * 100:.2g} %" if x < 0.1 else f"{x * 100:.0f} %"
