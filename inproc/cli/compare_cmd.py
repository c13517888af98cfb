"""``inproc compare BASELINE NEW``: per cell and metric, is NEW slower, faster, or the same within the noise?

Runs of two engines (vLLM against SGLang) on the same matrix are shown side by side instead,
with no verdict. Exit code: 0 every row judged and none regressed (or two engines), 1 a
regression, 3 no regression found but some rows could not be judged (the summary names them
and why), 2 bad input (one line on stderr).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import click

from inproc.compare.bound import MAX_SPREAD
from inproc.compare.estimate import StatSettings
from inproc.compare.side_by_side import side_by_side, two_engines
from inproc.compare.stats import RunSpread
from inproc.compare.keys import check_one_profile
from inproc.compare.samples import METRICS, MIN_SUBWINDOWS, SUB_WINDOW_S, SubWindowing
from inproc.compare.verdicts import CompareSettings, compare_runs
from inproc.errors import UsageError
from inproc.record.baseline import RunSet, load_runs
from inproc.record.damage import require_raw
from inproc.record.tojson import entry_id
from inproc.cli.report_cmd import emit, write_report
from inproc.history.explain import explain
from inproc.render.compare import formats, page
from inproc.render.compare.data import render_compare_json, render_side_by_side_json
from inproc.render.compare.side_by_side import side_by_side_view
from inproc.render.compare.view import compare_view

FORMATS = ("text", "md", "json")
DEFAULTS = CompareSettings()


def parse_threshold(text: str) -> float:
    """``5%`` -> 0.05; the percent sign is required, so 0.05 is never read as 5 %."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*", text)
    if not m:
        raise UsageError(f"Bad --threshold {text!r}. Give a percentage, e.g. 5% or 2.5%.")
    return float(m.group(1)) / 100


def parse_run_spread(text: str | None) -> dict[str, RunSpread]:
    """``--run-spread 3%``: one run's log spread for every metric, as stated; None: none stated."""
    if text is None:
        return {}
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*", text)
    if not m or not 0 <= float(m.group(1)) < 100:
        raise UsageError(f"Bad --run-spread {text!r}. Give a percentage from 0% to below 100%, e.g. 3% or 0.5%.")
    return {k: RunSpread(float(m.group(1)) / 100, 0, "--run-spread") for k in METRICS}


def parse_max_spread(text: str | None, run_spread: str | None) -> float:
    """``--max-spread 25%``: the plausible maximum run-to-run spread of one run against one run (None: the default)."""
    if text is None:
        return MAX_SPREAD
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*", text)
    if not m or not 0 < float(m.group(1)) <= 200:
        raise UsageError(f"Bad --max-spread {text!r}. Give a percentage above 0% up to 200%, e.g. 25% or 10%.")
    if run_spread is not None:
        raise UsageError(f"--max-spread {text!r} with --run-spread {run_spread!r}: a stated spread is tested as it is; "
                         "give one of the two.")
    return float(m.group(1)) / 100


def parse_confidence(text: str, flag: str) -> float:
    """``80%`` -> 0.8, for a confidence from 50% to below 100%."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*", text)
    if not m or not 50 <= float(m.group(1)) < 100:
        raise UsageError(f"Bad {flag} {text!r}. Give a percentage from 50% to below 100%, e.g. 80% or 95%.")
    return float(m.group(1)) / 100


def parse_metrics(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    for name in names:
        if name not in METRICS:
            raise UsageError(f"Unknown --metric {name!r}. Metrics: {', '.join(METRICS)}.")
    if not names:
        raise UsageError(f"Empty --metric {text!r}. Metrics: {', '.join(METRICS)}.")
    return names


def parse_sub_window(text: str | None) -> SubWindowing:
    """``0.5s`` (seconds) or ``16steps``; None: the default (``samples.SUB_WINDOW_S``, or less in a short window)."""
    if text is None:
        return SubWindowing()
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|steps?)\s*", text)
    value = float(m.group(1)) if m else 0.0
    if not m or value <= 0 or (m.group(2) != "s" and not value.is_integer()):
        raise UsageError(f"Bad --sub-window {text!r}. Give seconds or steps above 0, e.g. 0.5s or 16steps.")
    return SubWindowing(sub_s=value) if m.group(2) == "s" else SubWindowing(steps=int(value))


def check_baseline(side: RunSet, allow: tuple[str, ...]) -> None:
    """A baseline file must hold runs of one profile (what ``inproc baseline`` checked when it was made)."""
    if side.baseline and len(side.runs) > 1:
        labels = side.sources if len(side.sources) == len(side.runs) else [f"run {i + 1}" for i in range(len(side.runs))]
        check_one_profile(side.runs, labels, allow, f"Baseline {side.path}")


def check_output(output: str, inputs: tuple[str, ...], flag: str = "-o") -> None:
    """A report never replaces an input, nor any results or baseline file, and goes into a folder that exists."""
    out = Path(output)
    example = "compare.html" if flag == "--html" else "compare.md"
    if out.is_dir():
        raise UsageError(f"{flag} {output!r} is a directory. Give a file path, e.g. {out / example}.")
    if not out.parent.is_dir():
        raise UsageError(f"{flag} {output!r}: no folder {str(out.parent)!r}. Give a path in an existing folder, "
                         f"e.g. {example}.")
    if not out.exists():
        return
    if any(Path(i).exists() and out.samefile(i) for i in inputs):
        raise UsageError(f"{flag} {output!r} is one of the files compared. Give a new path, e.g. {example}.")
    try:
        data = json.loads(out.read_text())
    except (ValueError, UnicodeDecodeError):
        return
    if isinstance(data, dict) and ("schema_version" in data or "baseline_version" in data):
        raise UsageError(f"{flag} {output!r} is a results or baseline file, not a report. Give another path.")


EXIT_CODES = ("Exit code: 0 every row judged and none regressed; 1 a regression; 3 no regression found, but some rows "
              "could not be judged (one run each side without a spread, disturbed or throttled, too few samples; the "
              "summary names them); 2 bad input.")


@click.command(short_help="Compare a run against a baseline; exit 1 on a regression.", epilog=EXIT_CODES)
@click.argument("baseline_path", metavar="BASELINE")
@click.argument("new_path", metavar="NEW")
@click.option("--threshold", default=f"{DEFAULTS.threshold * 100:g}%", show_default=True,
              help="A change counts only beyond this factor (and only when significant).")
@click.option("--metric", "metrics", default=",".join(DEFAULTS.metrics), show_default=True,
              help=f"Metrics to compare: {', '.join(METRICS)}.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text: aligned rows; md: GitHub Markdown (for $GITHUB_STEP_SUMMARY); json: every figure.")
@click.option("--allow-different", "allow", multiple=True, metavar="KEY",
              help="Compare although KEY differs, e.g. engine.version (repeatable; a prefix such as plan works).")
@click.option("--sub-window", help=f"Cut each window for tok_s samples: seconds (0.5s) or steps (16steps). Default: "
                                   f"{SUB_WINDOW_S:g} s, or 1/{MIN_SUBWINDOWS} of a window shorter than "
                                   f"{SUB_WINDOW_S * MIN_SUBWINDOWS:g} s.")
@click.option("--run-spread", help="One run against one run: how much a whole run's figure varies from run to run on "
                                    "your machine (log standard deviation, e.g. 2%), tested as stated. Without it, "
                                    "--max-spread bounds the spread (docs/statistics.md).")
@click.option("--max-spread", help=f"One run against one run, no --run-spread: the most a whole run's figure plausibly "
                                    f"varies from run to run (log standard deviation). A row is slower or faster only "
                                    f"when the spread its change needs to be noise is beyond it, asv's --factor way. "
                                    f"Default {MAX_SPREAD * 100:g}%.")
@click.option("--threshold-confidence", default=f"{StatSettings().threshold_confidence * 100:g}%", show_default=True,
              help="A slower or faster change must lie beyond the threshold with this confidence (one-sided).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report here instead of stdout.")
@click.option("--html", "html", type=click.Path(dir_okay=False),
              help="Also write one HTML page: the verdict table and both runs' throughput-interactivity curves.")
def compare(baseline_path, new_path, threshold, metrics, fmt, allow, sub_window, run_spread, max_spread,
            threshold_confidence, output, html) -> int:
    """Compare NEW (a results file) against BASELINE (a results file, or a baseline from 'inproc baseline')."""
    settings = CompareSettings(parse_threshold(threshold), parse_metrics(metrics), tuple(allow),
                               StatSettings(cutting=parse_sub_window(sub_window),
                                            run_spread=parse_run_spread(run_spread),
                                            max_spread=parse_max_spread(max_spread, run_spread),
                                            threshold_confidence=parse_confidence(threshold_confidence,
                                                                                  "--threshold-confidence")))
    for flag, path in (("-o", output), ("--html", html)):
        if path:
            check_output(path, (baseline_path, new_path), flag)
    if output and html and Path(output).resolve() == Path(html).resolve():
        raise UsageError(f"-o and --html are the same file {output!r}. Give two paths, e.g. -o compare.md --html compare.html.")
    base, new = load_runs(baseline_path), load_runs(new_path)
    compared = {entry_id(e) for r in base.runs for e in r.decode} & {entry_id(e) for r in new.runs for e in r.decode}
    for rec in base.runs + new.runs:
        require_raw(rec, "compare", compared)  # a cell in both sides is compared from its raw records
    for side in (base, new):
        check_baseline(side, settings.allow_different)
    if two_engines(base.runs, new.runs):
        result = side_by_side(base.runs, new.runs, settings.allow_different, baseline_path, new_path)
        view = side_by_side_view(result)
        text = render_side_by_side_json(result) if fmt == "json" else formats.SIDE_BY_SIDE[fmt](view)
    else:
        result = compare_runs(base.runs, new.runs, settings, baseline_path, new_path)
        explained = explain(base.runs, new.runs, result)
        view = compare_view(result, explained)
        text = render_compare_json(result, explained) if fmt == "json" else formats.COMPARE[fmt](view)
    if html:
        write_report(html, page.html(view, base.runs, new.runs, baseline_path, new_path), "compare")
    emit(text, output, "compare")
    return result.exit_code
