"""``inproc`` entry point: the command group and the one-line error contract (exit 2)."""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

import click

from inproc import __version__
from inproc.cli.baseline_cmd import baseline
from inproc.cli.bisect_cmd import bisect
from inproc.cli.cell_cmd import cell
from inproc.cli.compare_cmd import compare
from inproc.cli.graphs_cmd import graphs
from inproc.cli.history_cmd import history
from inproc.cli.kernels_cmd import kernels
from inproc.cli.merge_cmd import merge
from inproc.cli.profile_cmd import profile
from inproc.cli.report_cmd import report
from inproc.cli.run_cmd import run
from inproc.cli.selftest_cmd import selftest
from inproc.cli.sweep_cmd import sweep
from inproc.cli.worker_cmd import worker
from inproc.engines.base import EngineBuildError
from inproc.errors import UsageError
from inproc.run.interrupt import RunInterrupted


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="inproc")
def cli() -> None:
    """Build an LLM engine inside this process and measure its speed-test matrix."""


cli.add_command(run)
cli.add_command(cell)
cli.add_command(profile)
cli.add_command(report)
cli.add_command(merge)
cli.add_command(sweep)
cli.add_command(worker)
cli.add_command(compare)
cli.add_command(baseline)
cli.add_command(history)
cli.add_command(selftest)
cli.add_command(bisect)
cli.add_command(graphs)
cli.add_command(kernels)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; user mistakes print one line and exit 2, never a traceback."""
    try:
        rv = cli.main(args=argv, prog_name="inproc", standalone_mode=False)
    except RunInterrupted as e:
        click.echo(f"\nStopped: {e}", err=True)
        sys.exit(130)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("\nAborted.", err=True)
        sys.exit(130)
    except click.exceptions.NoArgsIsHelpError as e:  # bare 'inproc' or 'inproc profile': the help, not an error
        click.echo(e.ctx.get_help())
        sys.exit(0)
    except click.UsageError as e:
        hint = f" (see 'inproc {e.ctx.info_name} --help')" if e.ctx is not None and e.ctx.info_name != "inproc" else ""
        click.echo(f"Error: {e.format_message()}{hint}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        click.echo(f"Error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    except (UsageError, EngineBuildError) as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(2)
    sys.exit(rv if isinstance(rv, int) else 0)


def run_process(argv: list[str] | None = None) -> NoReturn:
    """The process's entry (``python -m inproc``, the ``inproc`` script): :func:`main`, then :func:`end_process`."""
    try:
        main(argv)
        code: object = 0
    except SystemExit as e:
        code = e.code
    end_process(code)


def end_process(code: object) -> NoReturn:
    """End the process with exit status ``code`` (a ``SystemExit`` code), skipping only the interpreter's teardown.

    Everything a normal exit does that others can see still happens, in its order: the exit
    handlers (``atexit``: engine and pool shutdowns, multiprocessing joining its children,
    ``weakref.finalize``, logging's flush), then stdout and stderr flushed. What is skipped is
    the interpreter freeing its modules one object at a time, about 2 s once vLLM and torch
    are imported (measured in ``docs/measurements.md``), which delays every command and each
    child of ``inproc bisect``. When a thread other than the main one still runs, or the code
    is not an exit status, or a profiler or debugger watches the process (``python -m cProfile
    -m inproc`` prints its figures after the command returns), the exit is the normal one.
    """
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    watched = sys.getprofile() is not None or sys.gettrace() is not None
    if others or watched or not (code is None or isinstance(code, int)):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    os._exit(code or 0)
