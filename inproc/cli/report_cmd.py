"""``inproc report RESULTS [--format md|html|csv] [-o PATH] [--rederive]``: the report of a results file."""
from __future__ import annotations

from pathlib import Path

import click

from inproc.errors import UsageError
from inproc.graphs.padding import parse_sizes
from inproc.render.csv import render_csv
from inproc.render.html import render_html
from inproc.render.markdown import render_markdown
from inproc.render.sweep import formats as sweep_formats
from inproc.render.sweep import page as sweep_page
from inproc.render.sweep.data import render_sweep_csv
from inproc.render.sweep.view import sweep_view
from inproc.record.load import load_results
from inproc.record.write import write_text_atomic
from inproc.sweep.manifest import load_sweep
from inproc.sweep.summary import summarize

RENDERERS = {"md": render_markdown, "html": render_html, "csv": render_csv}
SWEEP_WRITERS = {"md": sweep_formats.markdown, "html": sweep_page.html}


@click.command(short_help="Render a results file as Markdown, HTML or CSV.")
@click.argument("results_path", metavar="RESULTS|DIR")
@click.option("--format", "fmt", type=click.Choice(tuple(RENDERERS)), default="md", show_default=True,
              help="md: the matrix as Markdown; html: one self-contained page with charts; csv: all measurements.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (replacing a previous report) instead of stdout.")
@click.option("--rederive", is_flag=True,
              help="Derive every figure and verdict again from the raw records instead of reading the ones the file "
                   "cached (done anyway when the file's definitions version is not this inproc's).")
@click.option("--sizes", multiple=True, metavar="LIST",
              help="A list of CUDA-graph capture sizes to cost in the report's CUDA graphs section, e.g. 1,2,4,8 "
                   "(repeatable; the section shows the captured list without it).")
def report(results_path: str, fmt: str, output: str | None, rederive: bool, sizes: tuple[str, ...]) -> None:
    """Render the matrix report of a results file written by 'inproc run' or 'inproc cell',
    or the summary of a sweep folder written by 'inproc sweep' (one chart per cell in HTML)."""
    graph_sizes = tuple(parse_sizes(s) for s in sizes)
    if output:
        check_output_path(output, results_path)
    if Path(results_path).is_dir():
        summary = summarize(load_sweep(results_path), results_path)
        text = render_sweep_csv(summary) if fmt == "csv" else SWEEP_WRITERS[fmt](sweep_view(summary))
    elif fmt == "csv":
        text = render_csv(load_results(results_path, rederive=rederive))
    else:
        text = RENDERERS[fmt](load_results(results_path, rederive=rederive), graph_sizes)
    emit(text, output, "report")


def write_report(path: str, text: str, command: str) -> None:
    """A rendered report written to ``path`` (atomically), its path said on stderr."""
    write_text_atomic(path, text)
    click.echo(f"{command}: {path}", err=True)


def emit(text: str, output: str | None, command: str) -> None:
    """A rendered report to ``-o`` (see :func:`write_report`), or to stdout without one."""
    if output:
        write_report(output, text, command)
    else:
        click.echo(text, nl=False)


def check_output_path(output: str, results_path: str) -> None:
    """A report never replaces the results file, nor any JSON file (reports are md, html, csv)."""
    out = Path(output)
    if out.exists() and Path(results_path).exists() and out.samefile(results_path):
        raise UsageError(f"-o {output!r} is the results file itself. Give a new path, e.g. {out.with_suffix('.md')}.")
    if out.exists() and out.suffix.lower() == ".json":
        raise UsageError(f"-o {output!r} is an existing JSON file, not a report. Give a .md, .html or .csv path.")
    if out.is_dir():
        raise UsageError(f"-o {output!r} is a directory. Give a file path, e.g. {out / 'report.md'}.")
