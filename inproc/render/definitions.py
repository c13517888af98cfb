"""The report's Definitions: one line per figure, read from the metric functions' docstrings.

Each figure is defined once, by the docstring of the function that computes it
(``inproc/measure/metrics.py``, ``inproc/telemetry/metrics.py``); this module only picks and
joins them, so the report can never drift from the code. Words that are not in a
docstring say how per-GPU values are combined, as ``inproc/telemetry/figures.py`` does.
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass

from inproc.measure import anatomy as an
from inproc.measure import metrics as m
from inproc.measure import slow
import inproc.telemetry.metrics as tm

# Function names in docstrings are shown as the figure's name in the report.
_NAMES = {"measured_for_s": "Measured for", "output_tokens": "Output tokens"}


@dataclass(frozen=True)
class Definition:
    label: str  # a column name of the measurements table, or a term
    text: str  # one line; code in single backticks


def doc(fn: Callable, full: bool = False, column: str = "") -> str:
    """The docstring's first paragraph (or all of it), on one line, Sphinx roles resolved.

    ``column``: the sample column a generic telemetry statistic is taken of.
    """
    body = inspect.getdoc(fn) or ""
    if not full:
        body = body.split("\n\n")[0]
    body = body.replace("``t_open_s`` to ``t_close_s``", "window open to window close")
    return clean(body.replace("``column``", f"``{column}``") if column else body)


def clean(body: str) -> str:
    body = re.sub(r":func:`(\w+)`", lambda g: _NAMES.get(g.group(1), f"`{g.group(1)}`"), body)
    text = " ".join(body.replace("``", "`").split())
    return text[:1].upper() + text[1:]


def _window() -> str:
    module = inspect.getdoc(m) or ""
    found = [p for p in module.split("\n\n") if p.startswith("The decode window:")]
    return clean(found[0].removeprefix("The decode window:")) if found else doc(m.window)


def definitions() -> list[Definition]:
    """Every figure the report can show, in table order (telemetry last)."""
    gpu_sum, gpu_mean, gpu_max = " Summed over GPUs.", " Averaged over GPUs.", " Highest over GPUs."
    return [
        Definition("Decode window", _window()),
        Definition("Total tok/s", doc(m.total_tok_s) + " Prefill rows: prompt tokens ÷ Prefill TTFT."),
        Definition("Per request tok/s", doc(m.per_request_tok_s, full=True)),
        Definition("TTFT", f"{doc(m.ttft_ms_median)} `ttft_s`: {doc(m.ttft_s)}"),
        Definition("Time between tokens", f"{doc(m.tbt_ms_median)} `tbt_intervals_s`: {doc(m.tbt_intervals_s, full=True)}"),
        Definition("Average active requests", doc(m.avg_active)),
        Definition("Completed requests", doc(m.completed_requests) + " Prefill rows: samples taken."),
        Definition("Output tokens", doc(m.output_tokens)),
        Definition("Sub-window", doc(m.subwindows, full=True)),
        Definition("Measured for", doc(m.measured_for_s)),
        Definition("Max waiting", doc(m.max_waiting)),
        Definition("Harness overhead", doc(m.harness_overhead)),
        Definition("Preemptions", doc(an.preemptions)),
        Definition("Spec acceptance", doc(m.spec_acceptance_rate)),
        Definition("Spec mean acceptance length", doc(m.spec_mean_acceptance_length)),
        Definition("Prefill TTFT", f"{doc(m.prefill_ttft_s)} Prompt tok/s: {doc(m.prompt_tok_s)}"),
        Definition("Prefill steps", doc(m.prefill_steps)),
        Definition("Slow steps", doc(slow.threshold_s).removesuffix(" Returns that limit, in the unit of its arguments.")
                   + " " + doc(slow.cause_of).removesuffix(" Returns (cause, detail in words).")),
        Definition("Slow-step time", doc(slow.slow_time_share)),
        Definition("Measuring time", doc(m.wall_per_window, full=True)),
        Definition("Step anatomy", clean((inspect.getdoc(an) or "").split("\n\n")[1])),
        Definition("CUDA graphs", doc(an.graph_step_share) + f" Token shares: {doc(an.graph_token_share)}"),
        Definition("Padding", doc(an.padding_waste, full=True)),
        Definition("Bandwidth", doc(an.achieved_bandwidth) + " `step_time_s`: " + doc(an.step_time_s)),
        Definition("% of peak BW", "Bandwidth ÷ the device's peak memory bandwidth (the Step anatomy section names it)."),
        Definition("FLOP/s", doc(an.achieved_flops)),
        Definition("% of peak FLOP/s", "FLOP/s ÷ the device's peak dense FLOP/s for the run's dtype (named in the Step anatomy section)."),
        Definition("Host %", doc(an.host_overhead_fraction, full=True)),
        Definition("Adapter %", doc(an.adapter_fraction, full=True)),
        Definition("Energy", doc(tm.gpu_energy_j) + gpu_sum),
        Definition("J/token", "Energy ÷ Output tokens, over the same window."),
        Definition("Mean power", doc(tm.window_mean, column="power_w") + gpu_sum),
        Definition("Mean SM clock", doc(tm.window_mean, column="sm_clock_mhz") + gpu_mean),
        Definition("Max temp", doc(tm.window_max, column="temp_c") + gpu_max),
        Definition("Host CPU", doc(tm.host_cpu_util_pct)),
        Definition("Process CPU", doc(tm.process_cpu_util_pct)),
        Definition("Max RSS", doc(tm.window_max, column="rss_bytes") + " `rss_bytes`: this process's resident memory."),
    ]


# Definitions shown whatever columns a table has: they name the window and the prefill row.
ALWAYS = ("Decode window", "Prefill TTFT", "Step anatomy", "Measuring time")


def shown_definitions(column_names: list[str]) -> list[Definition]:
    """The definitions of the columns a table shows, plus the window and prefill terms."""
    keep = set(column_names) | set(ALWAYS)
    return [d for d in definitions() if d.label in keep]
