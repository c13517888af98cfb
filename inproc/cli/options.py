"""Flags shared by ``inproc run`` and ``inproc cell``; defaults live in the profile/MatrixSettings."""
from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path

import click

from inproc.errors import UsageError
from inproc.measure.loops import LoopSettings
from inproc.plan.settings import ANATOMY_CHOICES, PROMPT_MODES, MatrixSettings
from inproc.run.outcome import NOTHING_MEASURED_EXIT_CODE, nothing_measured
from inproc.run.profiling import PROFILERS, DebugSettings
from inproc.run.watchdog import FACTOR, FLOOR_S, HUNG_EXIT_CODE, StepTimeout, parse_step_timeout
from inproc.telemetry.sampler import DEFAULT_HZ



def measure_options(f):
    """Flags that override the profile's [matrix] table (None: keep the profile's value)."""
    for opt in reversed([
        click.option("--duration", "window_s", type=float, help="Decode window W in seconds."),
        click.option("--window-steps", "window_steps", type=int,
                     help="A decode window of exactly N engine steps instead of --duration (a repeatable step count)."),
        click.option("--max-output", "max_output", type=int, help="Max output tokens per request M."),
        click.option("--prompt-mode", type=click.Choice(PROMPT_MODES), help="shared: one context per row, primed once; distinct: one per request."),
        click.option("--temperature", type=float, help="Sampling temperature of every request."),
        click.option("--seed", type=int, help="Prompt seed (default: a new random one, recorded)."),
        click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                     help="Override an engine argument, a key inside a table argument (KEY.SUB), or env.NAME (repeatable)."),
        click.option("--anatomy", type=click.Choice(ANATOMY_CHOICES), callback=lambda ctx, p, v: None if v is None else v == "on",
                     help="Step anatomy: on builds the engine with its per-step accounting (vLLM's stats flags), off "
                          "without it, and the anatomy figures are absent (default: on, or the profile's [matrix] anatomy)."),
        click.option("--kernels", type=click.Choice(ANATOMY_CHOICES), is_flag=False, flag_value="on",
                     callback=lambda ctx, p, v: None if v is None else v == "on",
                     help="Kernel pass: after each decode window (and the anatomy's pass), torch's profiler over "
                          "--kernel-steps steps gives a per-kernel table, outside every headline figure; --kernels "
                          "alone is on (default: off in run and sweep, on in cell, or the profile's [matrix] kernels)."),
        click.option("--kernel-steps", "kernel_steps", type=int,
                     help=f"Steps the kernel pass profiles (default: {MatrixSettings.kernel_steps}, or the profile's "
                          "[matrix] kernel_steps)."),
        click.option("--loop-check/--no-loop-check", default=True, help="Mark cells whose outputs repeat as Looped."),
        click.option("--telemetry-hz", type=float, default=DEFAULT_HZ, show_default=True,
                     help="Telemetry samples per second (at most 20; 0 turns sampling off)."),
    ]):
        f = opt(f)
    return f


def prompt_options(f):
    """``--prompts FILE`` and ``--tokenizer PATH``: prompts cut from real text (inproc.plan.text)."""
    f = click.option("--tokenizer", metavar="PATH",
                     help="With --prompts: the tokenizer.json (or a folder with one) to tokenize the text with "
                          "(default: the model's own; needed where the profile skips tokenizer start-up).")(f)
    return click.option("--prompts", "prompts_file", metavar="FILE",
                        help="Cut prompts from this text: plain text, JSON lines with a 'prompt' or 'text' field, or "
                             "ShareGPT JSON; drawn by the seed, cut or repeated to each context.")(f)


def open_prompts(profile, prompts_file: str | None, tokenizer: str | None):
    """The text prompts of ``--prompts`` (None without it); bad input is one line before any build."""
    if prompts_file is None:
        if tokenizer is not None:
            raise UsageError(f"--tokenizer {tokenizer} tokenizes --prompts FILE; give --prompts too, or drop it.")
        return None
    from inproc import engines
    from inproc.plan.text import open_text

    source = engines.get(profile.engine).tokenizer_source(profile.model, profile.engine_args)
    return open_text(prompts_file, tokenizer, source, seed=0)


def acceptance_options(f):
    """``--acceptance L`` / ``--acceptance-rates r1,...,rk``: draft acceptance forced (``inproc.plan.acceptance``)."""
    f = click.option("--acceptance-rates", "acceptance_rates", metavar="R1,...,RK",
                     help="Force per-position unconditional acceptance rates (rate i: the first i drafts all "
                          "accepted), non-increasing, one per draft token (vLLM only).")(f)
    return click.option("--acceptance", "acceptance", metavar="L",
                        help="Force the mean acceptance length L in [1, k + 1] (the bonus token included) with the "
                             "engine's own benchmark knob (docs/speculative.md); default: the engine's own acceptance, "
                             "or the profile's [speculative] acceptance.")(f)


MAX_RETRY_DISTURBED = 10  # each try costs a cell's time; past this the machine is busy, not unlucky


def parse_retry_disturbed(value: str) -> int:
    """``--retry-disturbed N``: a whole number from 0 to :data:`MAX_RETRY_DISTURBED`, else one line."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = -1
    if not 0 <= n <= MAX_RETRY_DISTURBED or str(value).strip() != str(n):
        raise UsageError(f"Bad --retry-disturbed {value!r}: give how many times a disturbed cell is measured again, "
                         f"a whole number from 0 to {MAX_RETRY_DISTURBED}.")
    return n


def retry_option(f=None, *, default: int = 0):
    """``--retry-disturbed N`` (run and sweep: default 0; bisect: its own default)."""
    option = click.option("--retry-disturbed", default=str(default), show_default=True,
                          callback=lambda ctx, param, value: parse_retry_disturbed(value),
                          help="Measure a disturbed cell (other work on the machine during its window) again, up to "
                               "N times; every try is kept in the record, the cell's figures come from the last.")
    return option(f) if f is not None else option


def _step_timeout(ctx, param, value: str) -> StepTimeout:
    try:
        return parse_step_timeout(value)
    except ValueError as e:
        raise UsageError(str(e)) from None


def matrix_options(f):
    """:func:`measure_options`, plus the results file, --force and the step watchdog."""
    f = click.option("--step-timeout", default="auto", show_default=True, callback=_step_timeout,
                     help=f"End the run when one engine step takes longer: seconds, off, or auto (max({FLOOR_S:g} s, "
                          f"{FACTOR:g} x the longest step so far)). The cell becomes Error, the file is saved, "
                          f"stacks go to RESULTS.hang.txt, exit code {HUNG_EXIT_CODE}.")(f)
    f = click.option("--force", is_flag=True, help="Overwrite an existing results file.")(f)
    f = click.option("--out", type=click.Path(dir_okay=False), help="Results JSON path.")(f)
    return measure_options(f)


def debug_options(with_breakpoint: bool):
    """Profiler and NVTX flags (and, for one cell, a breakpoint); see inproc.run.profiling."""
    def wrap(f):
        opts = [
            click.option("--profile", "profiler", type=click.Choice(PROFILERS),
                         help="Profile steps after each window with the engine's own profiler: torch (a trace per rank) "
                              "or cuda (cudaProfilerStart/Stop, for nsys --capture-range=cudaProfilerApi)."),
            click.option("--profile-steps", type=int, default=DebugSettings.profile_steps, show_default=True,
                         help="Steps profiled (N)."),
            click.option("--profile-skip", type=int, default=DebugSettings.profile_skip, show_default=True,
                         help="Steps after the window before profiling starts (K)."),
            click.option("--profile-dir", type=click.Path(file_okay=False),
                         help="Where traces go (default: RESULTS.profiles/ beside the results file)."),
            click.option("--profile-with-stack", is_flag=True, help="Record Python stacks in torch traces."),
            click.option("--nvtx", is_flag=True, help="One NVTX range per engine step (ctx, C, step; a mark with bs and graph mode)."),
        ]
        if with_breakpoint:
            opts.append(click.option("--break-at-step", type=int,
                                     help="Call breakpoint() right before the Nth step of the window (PYTHONBREAKPOINT picks the debugger)."))
            opts.append(click.option("--break-at-slow-step", is_flag=True,
                                     help="Call breakpoint() right after the window's first slow step, judged as the window "
                                          "goes (inproc.measure.slow); locals: row, step, cause, detail, median_ms."))
            opts.append(click.option("--profile-slow", is_flag=True,
                                     help="Profile the window in chunks of --profile-steps steps (--profile, default torch) and "
                                          "keep the chunk holding the first slow step and the one before it."))
        for opt in reversed(opts):
            f = opt(f)
        return f
    return wrap


def debug_settings(out: str | None, profiler=None, profile_steps=10, profile_skip=0, profile_dir=None,
                   profile_with_stack=False, nvtx=False, break_at_step=None, break_at_slow_step=False,
                   profile_slow=False) -> DebugSettings:
    """The debug flags as settings; traces default to RESULTS.profiles/ beside the results file;
    --profile-slow profiles with torch unless --profile says otherwise."""
    if profile_slow and not profiler:
        profiler = "torch"
    if profiler and not profile_dir:
        profile_dir = str(Path(out).with_suffix(".profiles") if out else Path("inproc-profiles"))
    return DebugSettings(profiler, profile_steps, profile_skip, str(Path(profile_dir).resolve()) if profile_dir else "",
                         profile_with_stack, nvtx, break_at_step, break_at_slow_step, profile_slow)


#: The flag of each MatrixSettings field that a flag of its own sets (the rest: --field-name).
FLAG_OF = {"window_s": "--duration", "prefill_contexts": "--prefill-contexts", "max_output": "--max-output"}


def settings_with(base: MatrixSettings, **flags) -> MatrixSettings:
    """The profile's matrix settings with every flag that was given applied.

    MatrixSettings checks every value; a bad one is reported under the flag that gave it. A
    cell list replaces the contexts x concurrency grid, so the two are not given together; a
    grid given on the command line replaces a cell list from the profile.
    """
    given = {k: v for k, v in flags.items() if v is not None}
    grid = [k for k in ("contexts", "concurrency") if k in given]
    if grid and "cells" in given:
        raise UsageError(f"--cells lists the decode cells itself; give it or --{grid[0]}, not both.")
    for name, value in given.items():
        try:
            replace(base, **{name: value})
        except UsageError as e:
            flag = FLAG_OF.get(name, "--" + name.replace("_", "-"))
            reason = str(e).split(": ", 1)[-1]
            shown = value if not isinstance(value, tuple) else ",".join(map(str, value))
            raise UsageError(f"Bad {flag} {shown!r}: {reason}") from None
    if grid:
        given["cells"] = None
    return replace(base, **given)


def command_line() -> str:
    return shlex.join(["inproc", *sys.argv[1:]])


class TerminalSink:
    """Progress lines to stderr; on a terminal (``live``) a line ending in ``...`` is overwritten."""

    def __init__(self) -> None:
        self.live = sys.stderr.isatty()

    def __call__(self, line: str) -> None:
        if self.live and line.endswith("..."):
            click.echo("\r\033[K" + line, err=True, nl=False)
        else:
            click.echo(("\r\033[K" if self.live else "") + line, err=True)


def exit_code(record) -> int:
    """0 when a cell was measured; otherwise the reason on stderr and :data:`NOTHING_MEASURED_EXIT_CODE`."""
    why = nothing_measured(record)
    if why is None:
        return 0
    click.echo(f"\nNo cell was measured ({why}): exit code {NOTHING_MEASURED_EXIT_CODE}.", err=True)
    return NOTHING_MEASURED_EXIT_CODE


def loop_settings(enabled: bool) -> LoopSettings:
    return LoopSettings(enabled=enabled)
