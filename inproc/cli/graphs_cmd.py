"""``inproc graphs RESULTS… [--sizes LIST] [--budget K] [--max-size N] [--weight tokens|time]``:
the padding each list of CUDA-graph capture sizes costs on the decode steps a run saw, and the least-waste list."""
from __future__ import annotations

import shlex

import click

from inproc import engines
from inproc.cli.report_cmd import check_output_path, emit, write_report
from inproc.errors import UsageError
from inproc.graphs.analysis import Options, analyse
from inproc.graphs.cost import capture_cost
from inproc.graphs.padding import parse_sizes
from inproc.graphs.steps import label_prefix, read_run
from inproc.graphs.suggest import WEIGHTS
from inproc.graphs.sweepfile import sizes_file_text
from inproc.record.io import load_results
from inproc.render.graphs import formats
from inproc.render.graphs.data import render_graphs_json
from inproc.render.graphs.view import graphs_view

FORMATS = ("text", "md", "json", "html")
DEFAULTS = Options()


def set_args(engine: str, sizes: tuple[int, ...]) -> tuple[str, ...]:
    """The ``--set`` overrides that capture ``sizes`` on ``engine`` (none where its graphs are not sized in tokens)."""
    return engines.get(engine).graph_size_sets(sizes) if engine in engines.names() else ()


def _positive(value: int | None, flag: str, example: str) -> None:
    if value is not None and value < 1:
        raise UsageError(f"Bad {flag} {value}: give a whole number of 1 or more, e.g. {flag} {example}.")


@click.command(short_help="Cost CUDA-graph capture sizes on a run; suggest a list.")
@click.argument("results", nargs=-1, required=True, metavar="RESULTS...")
@click.option("--sizes", "sizes", multiple=True, metavar="LIST",
              help="A list of capture sizes to cost beside the captured one, e.g. 1,2,4,8,16 (repeatable).")
@click.option("--budget", type=int, metavar="K", help="Suggest at most K sizes (default: as many as the run captured).")
@click.option("--max-size", type=int, metavar="N", help="Suggest no size above N (steps above it run without a graph).")
@click.option("--weight", type=click.Choice(WEIGHTS), default=DEFAULTS.weight, show_default=True,
              help="tokens: minimize padded tokens, each step once; time: padded tokens × the step's time.")
@click.option("--multiple-of", type=int, metavar="M",
              help="Suggest only multiples of M (default: 1 + k when every captured size is one, as an engine "
                   "rounds its list under speculative decoding; else 1).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report here instead of stdout.")
@click.option("--sweep-file", type=click.Path(dir_okay=False),
              help="Also write the lists (captured, each --sizes, suggested) for 'inproc sweep --graph-sizes FILE'.")
def graphs(results, sizes, budget, max_size, weight, multiple_of, fmt, output, sweep_file) -> None:
    """Cost lists of CUDA-graph capture sizes on the decode steps of results files and suggest the
    least-waste list of at most K sizes, with the waste each K reaches.

    Every window step of each Valid or Requests queued cell is padded up to the next size of a
    list; the padded tokens, the steps above the largest size (no graph) and the sizes no step
    used are given per cell and over every cell. The suggestion is exact (docs/sweeps.md).

    \b
      inproc graphs RESULTS.json
      inproc graphs RESULTS.json --sizes 1,2,4,8,16,32 --budget 12 --format html -o graphs.html
      inproc graphs RESULTS.json --sweep-file sizes.json && inproc sweep PROFILE --graph-sizes sizes.json --cells 8Kx64 --out DIR
    """
    _positive(budget, "--budget", "16")
    _positive(max_size, "--max-size", "512")
    _positive(multiple_of, "--multiple-of", "6")
    opts = Options(tuple(parse_sizes(s) for s in sizes), budget, max_size, weight, multiple_of)
    if output:
        for path in results:
            check_output_path(output, path)
    records = [load_results(p) for p in results]
    runs = tuple(read_run(rec, p, prefix) for rec, p, prefix in zip(records, results, label_prefix(list(results))))
    a = analyse(runs, capture_cost(records[0], runs[0].captured), opts)
    sets = set_args(records[0].engine.name, a.suggested.sizes)
    line = " ".join(f"--set {shlex.quote(s)}" for s in sets)
    writers = {"text": formats.text, "md": formats.markdown, "html": formats.html}
    for d in a.damaged:
        click.echo(f"graphs: not read: {d}", err=True)
    emit(render_graphs_json(a, sets) if fmt == "json" else writers[fmt](graphs_view(a, line)), output, "graphs")
    if sweep_file:
        write_report(sweep_file, sizes_file_text(a, records[0].engine.name), "graphs: sizes file")
