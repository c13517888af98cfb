"""``inproc history RUN... | DIR``: per cell and metric the series over nights, its change points, the newest night's verdict.

Exit code: 0 the newest night starts no regression and none of its cells was left out, 1 it starts one,
3 none found but a cell of it could not be judged (left out as disturbed or throttled), 2 bad
input (one line on stderr, nothing written).
"""
from __future__ import annotations

from pathlib import Path

import click

from inproc.cli.compare_cmd import DEFAULTS, check_output, parse_confidence, parse_metrics, parse_threshold
from inproc.compare.estimate import StatSettings
from inproc.cli.report_cmd import emit, write_report
from inproc.compare.samples import SubWindowing
from inproc.compare.verdicts import CompareSettings
from inproc.errors import UsageError
from inproc.history.build import HISTORY_ALLOWS, HistorySettings, build_history
from inproc.history.nights import Night, read_nights_checked
from inproc.record.summary import write_summary
from inproc.render.history import formats, page
from inproc.render.history.view import history_view


def _store_path(store: Path, n: Night) -> Path:
    return store / f"{n.label}.summary.json"


def _check_store(store: str | None) -> Path | None:
    if store is None:
        return None
    p = Path(store)
    if p.exists() and not p.is_dir():
        raise UsageError(f"--store {store!r} is a file. Give a folder for the per-night summaries, e.g. history/.")
    return p


def _store(store: Path, nights: list[Night]) -> list[str]:
    """Write a summary of each night not yet in the store; the paths written."""
    written = []
    for n in nights:
        target = _store_path(store, n)
        if Path(n.path).parent.resolve() == store.resolve() or target.exists():
            continue
        write_summary(target, n.record, n.source, SubWindowing())
        written.append(str(target))
    return written


@click.command(short_help="Follow nightly runs and judge each change in them.")
@click.argument("inputs", metavar="RUN... | DIR", nargs=-1, required=True)
@click.option("--threshold", default=f"{DEFAULTS.threshold * 100:g}%", show_default=True,
              help="A change counts only beyond this factor (and only when significant).")
@click.option("--threshold-confidence", default=f"{StatSettings().threshold_confidence * 100:g}%", show_default=True,
              help="A slower or faster change must lie beyond the threshold with this confidence (one-sided).")
@click.option("--metric", "metrics", default=",".join(DEFAULTS.metrics), show_default=True,
              help="Metrics to follow: tok_s, tbt, ttft.")
@click.option("--window", default=HistorySettings().window, show_default=True, type=click.IntRange(min=1),
              help="A night is judged against at most this many nights of its level (the nights since the last change).")
@click.option("--allow-different", "allow", multiple=True, metavar="KEY",
              help=f"Let KEY differ between nights too (always allowed: {', '.join(HISTORY_ALLOWS)}).")
@click.option("--format", "fmt", type=click.Choice(tuple(formats.FORMATS)), default="text", show_default=True,
              help="text: one line per change; md: GitHub Markdown (for $GITHUB_STEP_SUMMARY).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the summary here instead of stdout.")
@click.option("--html", "html", type=click.Path(dir_okay=False), help="Also write the trend page (one HTML file).")
@click.option("--store", type=click.Path(file_okay=False),
              help="Keep a small summary of each night given as a results file in this folder (the history's store).")
def history(inputs, threshold, threshold_confidence, metrics, window, allow, fmt, output, html, store) -> int:
    """Follow RUN files (results files or stored summaries, ordered by their date) or a folder of them.

    Exit code: 1 when the newest night starts a regression; 3 when it starts none but a cell of it could not
    be judged (left out as disturbed or throttled); 0 otherwise; 2 on bad input.
    """
    tests = StatSettings(threshold_confidence=parse_confidence(threshold_confidence, "--threshold-confidence"))
    settings = HistorySettings(CompareSettings(parse_threshold(threshold), parse_metrics(metrics),
                                               tuple(dict.fromkeys(HISTORY_ALLOWS + tuple(allow))), tests), window)
    for out in (output, html):
        if out:
            check_output(out, tuple(inputs))
    store_dir = _check_store(store)
    nights, unreadable = read_nights_checked(inputs, at_least=1 if store_dir is not None else 2)
    for u in unreadable:  # a damaged night is passed over, not the end of the history
        click.echo(f"history: unreadable night {u.path}: {u.reason}", err=True)
    if len(nights) == 1:  # the store's first night: kept, nothing to judge yet
        for path in _store(store_dir, nights):
            click.echo(f"history: stored {path}", err=True)
        click.echo(f"history: 1 night ({nights[0].label}); a history judges from 2 nights on.")
        return 0
    result = build_history(nights, settings, unreadable)  # every check before anything is written
    view = history_view(result)
    text = formats.FORMATS[fmt](view)
    if store_dir is not None:
        for path in _store(store_dir, list(result.nights)):
            click.echo(f"history: stored {path}", err=True)
    if html:
        write_report(html, page.html(view), "history")
    emit(text, output, "history")
    return result.exit_code
