"""A comparison's sentences, each written once for every format: the header (the sides, the threshold, the
tests), the geometric means, the verdict in one line and the rows that could not be judged, grouped by cause."""
from __future__ import annotations

from inproc.compare.samples import BLOCK_BOOTSTRAP
from inproc.compare.spread import NIGHT_ALPHA
from inproc.compare.verdicts import INDICATIVE, INSUFFICIENT, SLOWER, VERDICTS, Comparison, Row
from inproc.render.fmt import DASH
from inproc.units import format_tokens

SUMMARY_ITEMS = 5  # regressions named in the one-line verdict; the rows hold them all


def cell_text(r: Row) -> str:
    """``256 x 4``: a row's cell as every format names it."""
    return f"{format_tokens(r.context)} x {r.concurrency}"


def _tests(c: Comparison) -> str:
    """Which test decided each metric, and where its spread came from, read from the rows."""
    cut = c.settings.tests.cutting.describe(c.new.window_s)
    parts = []
    for metric in c.settings.metrics:
        tests = sorted({r.estimate.test for r in c.rows if r.metric == metric and r.estimate})
        stated = c.settings.tests.run_spread.get(metric)
        words = []
        for t in tests or [BLOCK_BOOTSTRAP]:
            if t == BLOCK_BOOTSTRAP:
                unit = cut if metric != "ttft" else "requests"
                words.append(f"{t} over {unit} + stated run spread {stated.log_sd * 100:g}%" if stated
                             else f"{t} over {unit}, within-run only")
            else:
                sources = sorted({r.estimate.spread_source for r in c.rows if r.metric == metric and r.estimate
                                  and r.estimate.test == t and r.estimate.spread_source})
                words.append(f"{t}, spread {sources[0]}" if len(sources) == 1 else t)
        parts.append(f"{metric}: {' / '.join(words)}")
    return "; ".join(parts)


def undecided_cause(r: Row) -> str:
    """Why no verdict could be reached on a row, in a few words: its reason up to the first detail."""
    if r.verdict == INSUFFICIENT and not r.reason.startswith("one run each side"):
        return "too few runs for a run-to-run spread"
    cut = min((k for k in (r.reason.find(": "), r.reason.find("; "), r.reason.find(" (")) if k > 0),
              default=len(r.reason))
    return r.reason[:cut] or r.verdict


def undecided_items(c: Comparison) -> list[str]:
    """The undecided rows grouped by cause: "256 x 1 ttft, 1K x 1 ttft: too few samples" (a cell whose every metric
    is undecided for one cause is named once)."""
    groups: dict[str, dict[str, list[str]]] = {}
    for r in c.undecided:
        groups.setdefault(undecided_cause(r), {}).setdefault(cell_text(r), []).append(r.metric)
    items = []
    for cause, cells in groups.items():
        named = [cell if len(metrics) == len(c.settings.metrics) else ", ".join(f"{cell} {m}" for m in metrics)
                 for cell, metrics in cells.items()]
        more = len(named) - SUMMARY_ITEMS
        items.append(", ".join(named[:SUMMARY_ITEMS]) + (f" and {more} more" if more > 0 else "") + f": {cause}")
    return items


def summary_line(c: Comparison) -> str:
    """The verdict in one line: the regressions; or none found, naming the rows that could not be judged and why; or
    none, every row judged."""
    counts = {v: sum(1 for r in c.rows if r.verdict == v) for v in VERDICTS}
    tally = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    if not c.regressions and c.undecided:
        n = len(c.undecided)
        return (f"No regression found, but {n} row{'s' if n > 1 else ''} could not be judged "
                f"({'; '.join(undecided_items(c))}) ({tally}).")
    if not c.regressions:
        bound = any(r.estimate is not None and r.estimate.needed_spread is not None for r in c.rows)
        within = (f"; one run each side: no change beyond what runs varying by --max-spread "
                  f"{c.settings.tests.max_spread * 100:g} % allow" if bound else "")
        return f"No regression ({tally or 'no rows'}{within})."
    items = [f"{r.key} {r.metric} {r.reason.removesuffix(INDICATIVE)}" if r.verdict == SLOWER else f"{r.key} {r.reason}"
             for r in c.regressions]
    n = len(items)
    shown = "; ".join(items[:SUMMARY_ITEMS]) + (f"; and {n - SUMMARY_ITEMS} more" if n > SUMMARY_ITEMS else "")
    indicative = any(r.estimate is not None and r.estimate.indicative and r.estimate.needed_spread is None
                     for r in c.regressions if r.verdict == SLOWER)
    return f"{n} regression{'s' if n > 1 else ''}{INDICATIVE if indicative else ''}: {shown} ({tally})."


def geomeans_line(c: Comparison) -> str:
    """The geometric mean of new ÷ baseline per metric, in one line."""
    parts = [f"{g.metric} {g.ratio:.3f} ({g.cells} cell{'s' if g.cells > 1 else ''})" if g.ratio is not None
             else f"{g.metric} {DASH} (no cells)" for g in c.geomeans]
    return "Geometric mean of new ÷ baseline over comparable cells: " + " · ".join(parts)


def runs_text(n: int) -> str:
    """``1 run``, ``3 runs``."""
    return f"{n} runs" if n > 1 else "1 run"


def header_lines(c: Comparison) -> list[str]:
    """The sides, the threshold and the tests, a line each."""
    b, n = c.base, c.new
    lines = [f"Baseline {b.label} ({runs_text(b.runs)}, {b.engine}) vs new {n.label} ({runs_text(n.runs)}, "
             f"{n.engine}); profile {n.profile}",
             f"Threshold {c.settings.threshold * 100:g}% with {c.settings.tests.threshold_confidence * 100:g}% confidence · "
             f"one alarm rate of {NIGHT_ALPHA * 100:g}% over all rows · {c.settings.tests.confidence * 100:g}% intervals",
             f"Tests: {_tests(c)}"]
    if c.allowed:
        lines.append("Allowed to differ: " + "; ".join(d.describe() for d in c.allowed))
    return lines
