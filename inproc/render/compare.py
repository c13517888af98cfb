"""A comparison as text, as Markdown (fit for ``$GITHUB_STEP_SUMMARY``) and as JSON.

One row per cell and metric, a mark per row, the ratio with its interval, a geometric
mean per metric at the end and the verdict in one line: asv's ``compare`` and pyperf's
``compare_to`` read this way.
"""
from __future__ import annotations

import json
from dataclasses import asdict

from inproc.compare.samples import BETWEEN_RUNS, BLOCK_BOOTSTRAP, METRICS
from inproc.compare.spread import NIGHT_ALPHA
from inproc.compare.verdicts import (INDICATIVE, INSUFFICIENT, FASTER, MISSING, NEW, NOT_COMPARABLE, NOT_RUN_BOTH,
                                     NOT_SIGNIFICANT, SLOWER, STATUS_CHANGED, VERDICTS, Comparison, Row)
from inproc.render import compare_kernels
from inproc.render.definitions import definitions
from inproc.render.fmt import DASH, ms, tok_s
from inproc.units import format_tokens

#: One character per verdict, asv's way: + worse, - better, blank for no change.
MARKS = {SLOWER: "+", FASTER: "-", NOT_SIGNIFICANT: " ", INSUFFICIENT: "~", NOT_COMPARABLE: "?", STATUS_CHANGED: "!",
         NEW: ">", MISSING: "<", NOT_RUN_BOTH: "="}
SUMMARY_ITEMS = 5  # regressions named in the one-line verdict; the rows hold them all
# history: 1 — 2026-12-01, first format; 2 — 2026-12-01, tests "block bootstrap" (one run each side,
# indicative, with "within" and "run_spread") and "between-run t"; Mann-Whitney and "p" gone;
# 3 — 2026-12-02, verdict "insufficient data"; rows carry "p_change", "at_least" and "spread_source"; settings carry
# "alarm_rate" and "threshold_confidence"; "run_spread" holds only a stated --run-spread; 4 — 2026-12-02, each
# diagnosis carries "step_change" ("tail", "typical", "unchanged" or null: inproc.history.tail) and "tail_share";
# 5 — 2026-12-03, "kernels": per cell with a kernel pass on both sides, each category's change per step
# (inproc.compare.kernels; inproc.render.compare_kernels.to_json); 6 — 2026-12-04, exit code 3 (rows not judged,
# listed under "undecided" with their cause); rows carry "needed_spread" (one run each side, inproc.compare.bound);
# settings carry "max_spread"; 7 — 2026-12-06, verdict "not run in either" (Over capacity or Exceeds max model length in
# both runs: judged, never undecided)
COMPARE_JSON_VERSION = 7


def _cell(r: Row) -> str:
    return f"{format_tokens(r.context)} x {r.concurrency}"


def _value(metric: str, v: float | None) -> str:
    if v is None:
        return DASH
    return tok_s(v) + " tok/s" if METRICS[metric].unit == "tok/s" else ms(v, 1)


def _factor(x: float) -> str:
    """A ratio: three decimals near 1, three significant digits far from it (a 2-run interval can span 10^6)."""
    return f"{x:.3f}" if 0.001 <= x < 1000 else f"{x:.3g}"


def _ratio(r: Row) -> tuple[str, str]:
    e = r.estimate
    if e is None:
        return DASH, DASH
    return _factor(e.ratio), f"[{_factor(e.interval.low)}, {_factor(e.interval.high)}]"


def row_cells(r: Row) -> list[str]:
    """The row's cells under COLUMNS, as text."""
    e = r.estimate
    ratio, interval = _ratio(r)
    verdict = r.reason if r.verdict in (SLOWER, FASTER) else r.verdict + (f": {r.reason}" if r.reason else "")
    return [_cell(r), r.metric, _value(r.metric, e.base_figure if e else None),
            _value(r.metric, e.new_figure if e else None), ratio, interval, verdict]


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
        groups.setdefault(undecided_cause(r), {}).setdefault(_cell(r), []).append(r.metric)
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


def _runs(n: int) -> str:
    return f"{n} runs" if n > 1 else "1 run"


def header_lines(c: Comparison) -> list[str]:
    """The sides, the threshold and the tests, a line each."""
    b, n = c.base, c.new
    lines = [f"Baseline {b.label} ({_runs(b.runs)}, {b.engine}) vs new {n.label} ({_runs(n.runs)}, {n.engine}); "
             f"profile {n.profile}",
             f"Threshold {c.settings.threshold * 100:g}% with {c.settings.tests.threshold_confidence * 100:g}% confidence · "
             f"one alarm rate of {NIGHT_ALPHA * 100:g}% over all rows · {c.settings.tests.confidence * 100:g}% intervals",
             f"Tests: {_tests(c)}"]
    if c.allowed:
        lines.append("Allowed to differ: " + "; ".join(d.describe() for d in c.allowed))
    return lines


COLUMNS = ["Cell", "Metric", "Baseline", "New", "Ratio", "Interval", "Verdict"]


def render_compare_text(c: Comparison) -> str:
    """The comparison for a terminal: header, aligned rows with their marks, geometric means, verdict."""
    table = [COLUMNS] + [row_cells(r) for r in c.rows]
    marks = [" "] + [MARKS[r.verdict] for r in c.rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS) - 1)]
    lines = header_lines(c) + [""]
    for mark, row in zip(marks, table):
        lines.append(f"{mark} " + "  ".join(f"{v:<{w}}" for v, w in zip(row, widths)) + "  " + row[-1])
    legend = ", ".join(f"{m.strip() or 'blank'} {v}" for v, m in MARKS.items())
    kernels = compare_kernels.text_section(c).rstrip("\n")
    return "\n".join(lines + ([kernels] if kernels else []) + ["", f"Marks: {legend}.", geomeans_line(c),
                                                               summary_line(c)]) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _md_table(rows: list[Row]) -> list[str]:
    out = ["| | " + " | ".join(COLUMNS) + " |", "|" + "---|" * (len(COLUMNS) + 1)]
    for r in rows:
        cells = [_md_escape(v) for v in row_cells(r)]
        if r.verdict in (SLOWER, STATUS_CHANGED):
            cells[-1] = f"**{cells[-1]}**"
        mark = MARKS[r.verdict].strip()
        out.append(f"| {f'`{mark}`' if mark else ''} | " + " | ".join(cells) + " |")
    return out


def render_compare_markdown(c: Comparison) -> str:
    """The comparison as GitHub Markdown: the verdict first, then the changes, then every row folded."""
    title = "regression" if c.regressions else "not every row judged" if c.undecided else "no regression"
    lines = [f"## inproc compare: {title}", "", f"**{_md_escape(summary_line(c))}**", ""]
    lines += [f"- {_md_escape(h)}" for h in header_lines(c)] + [f"- {_md_escape(geomeans_line(c))}", ""]
    changes = [r for r in c.rows if r.verdict not in (NOT_SIGNIFICANT, NOT_COMPARABLE, INSUFFICIENT, NOT_RUN_BOTH)]
    if changes:
        lines += ["### Changes", ""] + _md_table(changes) + [""]
    lines += compare_kernels.markdown_section(c)
    lines += [f"<details><summary>All {len(c.rows)} rows</summary>", ""] + _md_table(list(c.rows)) + ["", "</details>", ""]
    labels = [METRICS[m].label for m in c.settings.metrics] + (["Sub-window"] if "tok_s" in c.settings.metrics else [])
    defs = [f"- **{d.label}**: {_md_escape(d.text)}" for d in definitions() if d.label in labels]
    lines += ["<details><summary>Definitions</summary>", ""] + defs + ["", "</details>", ""]
    return "\n".join(lines)


def _row_json(r: Row) -> dict:
    e = r.estimate
    return {"cell": r.key, "context": r.context, "concurrency": r.concurrency, "metric": r.metric,
            "verdict": r.verdict, "reason": r.reason, "base_status": r.base_status, "new_status": r.new_status,
            "base": e.base_figure if e else None, "new": e.new_figure if e else None, "unit": METRICS[r.metric].unit,
            "ratio": e.ratio if e else None, "low": e.interval.low if e else None, "high": e.interval.high if e else None,
            "test": e.test if e else None, "significant": e.significant if e else None,
            "n_base": e.n_base if e else None, "n_new": e.n_new if e else None,
            "indicative": e.indicative if e else None, "run_spread": e.run_spread if e else None,
            "within": [e.within.low, e.within.high] if e and e.within else None,
            "spread_source": e.spread_source if e else None, "p_change": e.p_change if e else None,
            "at_least": e.at_least if e else None, "needed_spread": e.needed_spread if e else None}


def render_compare_json(c: Comparison) -> str:
    """The comparison as JSON: sides, settings, allowed differences, rows, geometric means, exit code."""
    s = c.settings
    doc = {"kind": "inproc-compare", "version": COMPARE_JSON_VERSION, "baseline": asdict(c.base), "new": asdict(c.new),
           "settings": {"threshold": s.threshold, "metrics": list(s.metrics), "allow_different": list(s.allow_different),
                        "confidence": s.tests.confidence, "resamples": s.tests.resamples, "seed": s.tests.seed,
                        "sub_window": s.tests.cutting.describe(c.new.window_s), "between_runs_test": BETWEEN_RUNS,
                        "run_spread": {k: asdict(v) for k, v in s.tests.run_spread.items()},
                        "alarm_rate": NIGHT_ALPHA, "threshold_confidence": s.tests.threshold_confidence,
                        "max_spread": s.tests.max_spread},
           "allowed": [asdict(d) for d in c.allowed], "rows": [_row_json(r) for r in c.rows],
           "geomeans": [asdict(g) for g in c.geomeans], "kernels": compare_kernels.to_json(c),
           "regressions": [f"{r.key} {r.metric}" if r.verdict == SLOWER else r.key for r in c.regressions],
           "undecided": [{"cell": r.key, "metric": r.metric, "verdict": r.verdict, "cause": undecided_cause(r)}
                         for r in c.undecided],
           "summary": summary_line(c), "exit_code": c.exit_code}
    return json.dumps(doc, indent=1) + "\n"


def render_diagnoses(explained, fmt: str) -> str:
    """What changed in the steps of each slower or faster row (``inproc.history.explain``): a section after the rows.

    text and md: one line per row; json: ``{"diagnoses": [{"cell", "metric", "diagnosis", "step_change",
    "tail_share"}]}`` to merge into the comparison's document ("step_change": where the step time moved,
    ``inproc.history.tail``; null without slow-step figures on both sides). Empty when no row is slower or faster.
    """
    from inproc.render.history import cell_text, step_text

    if fmt == "json":
        return json.dumps({"diagnoses": [{"cell": e.row.key, "metric": e.row.metric, "diagnosis": e.diagnosis,
                                          "step_change": e.tail.where if e.tail else None,
                                          "tail_share": e.tail.tail_share if e.tail else None}
                                         for e in explained]})
    if not explained:
        return ""
    lines = [f"{cell_text((e.row.context, e.row.concurrency))} {step_text(e.row.metric, e.row.estimate)}: {e.diagnosis}."
             for e in explained]
    if fmt == "md":
        return "### What changed in the steps\n\n" + "".join(f"- {_md_escape(x)}\n" for x in lines) + "\n"
    return "\nWhat changed in the steps:\n" + "".join(f"  {x}\n" for x in lines)
