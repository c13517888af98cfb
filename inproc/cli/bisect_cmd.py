"""``inproc bisect PROFILE --cell LxC --repo DIR --good REV --bad REV``: the commit that made a cell slower.

Exit codes: 0 the first bad revision is found, 1 the range holds no such change, 2 bad input
(one line, the checkout unchanged), 130 interrupted (the checkout put back).
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import click

from inproc.bisect import git
from inproc.bisect.cells import flagged_cells
from inproc.bisect.child import CellSpec
from inproc.bisect.oracle import OracleSettings
from inproc.bisect.run import bisect as run_bisect
from inproc.bisect.targets import GitRevisions, read_builds
from inproc.cli.compare_cmd import parse_run_spread, parse_threshold
from inproc.cli.options import acceptance_options, retry_option
from inproc.errors import UsageError
from inproc.plan.acceptance import flag_args, from_flags
from inproc.profiles.spec import load_with_overrides
from inproc.units import cell_key

DEFAULTS = OracleSettings()


def _targets(repo, good, bad, builds, build, out: Path):
    if builds:
        if repo or good or bad:
            raise UsageError("--builds lists the builds itself (good first, bad last); give it without --repo/--good/--bad.")
        return read_builds(builds, out / "envs")
    if not (repo and good and bad):
        raise UsageError("Give --repo DIR --good REV --bad REV (a git checkout the engine is imported from), or --builds FILE.")
    root = git.repo_root(repo)
    good_id, bad_id = git.check_range(root, good, bad)
    return GitRevisions(root, [good_id, *git.revisions(root, good_id, bad_id)], build)


def parse_budget(text: str | None) -> float | None:
    """``90m`` -> 5400.0 seconds (s, m or h; a bare number is seconds); None: no budget."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([smh]?)\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"Bad --budget {text!r}. Give seconds of child runs above 0, e.g. 900, 90m or 2h.")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def _oracle(run_spread: str | None, alarm, threshold: str, max_pairs: int, budget: str | None,
            retry_disturbed: int = OracleSettings.retry_disturbed) -> OracleSettings:
    """The oracle's settings for one cell: the spread stated, else the alarm's (learned when 'learn' or none)."""
    base = OracleSettings(threshold=parse_threshold(threshold), max_pairs=max_pairs, budget_s=parse_budget(budget),
                          retry_disturbed=retry_disturbed)
    if run_spread is not None and run_spread.strip() == "learn":
        return base
    if run_spread is not None:
        return replace(base, run_spread=parse_run_spread(run_spread)["tok_s"].log_sd)
    if alarm is not None:
        return replace(base, run_spread=alarm.sigma, spread_df=alarm.df, spread_source=alarm.source)
    return base


def _extra(duration, window_steps, sets, acceptance=None) -> tuple[str, ...]:
    out: list[str] = flag_args(acceptance)
    if duration is not None:
        out += ["--duration", str(duration)]
    if window_steps is not None:
        out += ["--window-steps", str(window_steps)]
    for s in sets:
        out += ["--set", s]
    return tuple(out)


@click.command(short_help="Find the engine commit that made a cell slower.")
@click.argument("profile_path", metavar="PROFILE")
@click.option("--cell", help="The cell, CONTEXTxCONCURRENCY, e.g. 4Kx8.")
@click.option("--from-compare", "from_compare", help="Bisect the cells flagged in 'inproc compare --format json' output.")
@click.option("--from-history", "from_history", multiple=True,
              help="Bisect the cells of the newest night's regressions in these nights (run files or a folder; repeatable).")
@click.option("--repo", help="The git checkout the engine (or a plugin) is imported from.")
@click.option("--good", help="A revision without the regression.")
@click.option("--bad", help="A revision with it (a descendant of --good).")
@click.option("--builds", help="Instead of a repo: a file of Python interpreters or wheels, one a line, oldest first.")
@click.option("--build", help="Shell command run in the checkout after each checkout (e.g. a rebuild).")
@click.option("--map", "map_count", type=click.IntRange(min=0), default=0, show_default=True,
              help="First measure N revisions evenly over the range and report every change (not monotonic ones too).")
@click.option("--out", default="inproc-bisect", show_default=True, type=click.Path(file_okay=False),
              help="Folder of the log, each run's results file and the reports.")
@click.option("--resume", is_flag=True, help="Continue the bisect logged in --out; nothing measured is measured again.")
@click.option("--run-spread", default=None,
              help="How much one child's tok/s varies from run to run (log sd, e.g. 3%), held against the runs. "
                   "Default: the alarm's (history's for the cell with --from-history, the baseline's with "
                   "--from-compare), else learned from the bisect's own interleaved runs; 'learn': learned always.")
@click.option("--threshold", default=f"{DEFAULTS.threshold * 100:g}%", show_default=True,
              help="Bad must be slower than good beyond this (with compare's confidence).")
@click.option("--max-pairs", type=click.IntRange(min=1), default=DEFAULTS.max_pairs, show_default=True,
              help="Pairs (candidate, good) a revision gets, the looks of the sequential test, before it is "
                   "insufficient data (skipped).")
@click.option("--budget", default=None, help="Seconds of child runs the bisect may spend (e.g. 900, 90m, 2h); when "
                                              "spent, what is undecided is insufficient data. Default: no limit.")
@click.option("--duration", type=float, help="Each child's decode window in seconds (default: the profile's).")
@click.option("--window-steps", type=int, help="Each child's window in engine steps instead.")
@click.option("--seed", type=int, default=0, show_default=True, help="Prompt seed of every child (the same prompts).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Engine argument override for every child.")
@acceptance_options
@retry_option(default=OracleSettings.retry_disturbed)
def bisect(profile_path, cell, from_compare, from_history, repo, good, bad, builds, build, map_count, out, resume,
           run_spread, threshold, max_pairs, budget, duration, window_steps, seed, sets, retry_disturbed,
           acceptance, acceptance_rates) -> int:
    """Find the first revision where the cell got slower, measuring each one in a fresh child process."""
    out = str(Path(out).resolve())
    forced = from_flags(acceptance, acceptance_rates)
    load_with_overrides(profile_path, sets, forced)  # a bad profile, --set or --acceptance: one line, before anything moves
    cells = flagged_cells(cell, from_compare, from_history)
    oracles = {c: _oracle(run_spread, alarm, threshold, max_pairs, budget, retry_disturbed) for c, alarm in cells.items()}
    targets = _targets(repo, good, bad, builds, build, Path(out))
    code = 1
    for (context, concurrency), oracle in oracles.items():
        spec = CellSpec(str(Path(profile_path).resolve()), context, concurrency, seed, _extra(duration, window_steps, sets, forced))
        folder = Path(out) / cell_key(context, concurrency) if len(cells) > 1 else Path(out)
        r = run_bisect(targets, spec, folder, oracle, map_count, resume, build, lambda x: click.echo(x, err=True))
        click.echo(r.headline)
        click.echo(f"report: {folder / 'report.md'}, {folder / 'report.html'}")
        code = min(code, r.exit_code)
    return code
