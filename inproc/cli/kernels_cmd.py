"""``inproc kernels TRACE… [--mark NAME] [--format text|md|json|parquet] [-o PATH] [--run-spread PCT]``:
the per-step kernel breakdown of any torch profiler trace, filed as the kernel pass files its own."""
from __future__ import annotations

import os

import click

from inproc.cli.compare_cmd import parse_run_spread
from inproc.cli.report_cmd import emit
from inproc.compare.kernels import cell_change, judge
from inproc.errors import UsageError
from inproc.kernels.chrome import TraceError, load_trace
from inproc.kernels.filing import MARK, file_events
from inproc.render.kernel_trace import of_trace, render_json, render_markdown, render_text

FORMATS = ("text", "md", "json", "parquet")
#: Step marks the engines' own profiler traces carry (docs/kernel-breakdown.md says where each comes from).
KNOWN_MARKS = (MARK, "ProfilerStep#*", "execute_*", "*: run_batch")


def _read(path: str, mark: str):
    try:
        events = load_trace(path)
    except TraceError as e:
        raise UsageError(str(e)) from None
    filed = file_events(events, mark)
    if not filed.steps:
        raise UsageError(f"{path}: no host range named {mark!r} (the step mark). Give --mark NAME or a glob, "
                         f"e.g. {', '.join(repr(m) for m in KNOWN_MARKS)}.")
    return filed


def _labels(paths: tuple[str, ...]) -> list[str]:
    names = [os.path.basename(p) for p in paths]
    return names if len(set(names)) == len(names) else list(paths)


def _write_parquet(filed, output: str) -> None:
    import pyarrow.parquet as pq

    from inproc.record.atomic import write_atomic
    from inproc.record.tables import arrow_table

    write_atomic(output, lambda f: pq.write_table(arrow_table(filed.table.columns()), f))  # as a cell's table
    click.echo(f"kernels: {output}", err=True)


@click.command(short_help="Per-step kernel breakdown of torch profiler traces; two compared.")
@click.argument("traces", nargs=-1, required=True, metavar="TRACE...")
@click.option("--mark", default=MARK, show_default=True,
              help="The host range that delimits a step: a name or a glob (ProfilerStep#* for a scheduled "
                   "torch profiler, execute_* for vLLM's worker annotations, '*: run_batch' for SGLang's).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="parquet writes the kernels table a cell holds (step, name, category, calls, device_ns); one trace.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here instead of stdout (parquet needs it).")
@click.option("--run-spread", metavar="PCT",
              help="Two traces: the run-to-run spread to allow (e.g. 3%); without it the steps' own noise is "
                   "shown and no category is named, as in inproc compare.")
def kernels(traces, mark, fmt, output, run_spread) -> None:
    """The per-step breakdown of torch profiler traces (.json or .json.gz, as export_chrome_trace
    writes them): each device activity filed to the step whose mark holds the call that launched it,
    by category, with the activities no step launched counted; two traces compared, steps as units.

    \b
      inproc kernels RESULTS.cells/ctx8K-C16.kernels.pt.trace.json
      inproc kernels before.json.gz after.json.gz --run-spread 3%
      inproc kernels rank0.pt.trace.json.gz --mark 'ProfilerStep#*' --format parquet -o kernels.parquet
    """
    spread = parse_run_spread(run_spread).get("tok_s")
    if fmt == "parquet" and (not output or len(traces) != 1):
        raise UsageError("--format parquet writes one trace's table to a file: give one TRACE and -o FILE.parquet.")
    if output and os.path.isdir(output):
        raise UsageError(f"-o {output!r} is a directory. Give a file path, e.g. {os.path.join(output, 'kernels.md')}.")
    filed = [_read(p, mark) for p in traces]
    if fmt == "parquet":
        _write_parquet(filed[0], output)
        return
    shown = [of_trace(label, f) for label, f in zip(_labels(traces), filed)]
    change = None
    if len(shown) == 2:
        found = cell_change((0, 0), [shown[0].summary], [shown[1].summary],
                            run_spread=spread.log_sd if spread else None)
        change = judge([found])[0] if found is not None else None
    render = {"text": render_text, "md": render_markdown, "json": render_json}[fmt]
    emit(render(shown, change), output, "kernels")
