"""``python -m tests.slowed [--cpus 0] [--burners 2] [--max-s S] [--] CMD ...``: run CMD as on a slower machine.

CMD and ``--burners`` CPU burners (:func:`tests.load.burning`) are bound to the CPUs ``--cpus``
(default: the first CPU this process may use), so every process CMD starts shares them with
the burners: on one CPU with two burners, an engine's step gets about a third of a core. The
burners end with CMD, or after ``--max-s`` seconds at the latest. The exit status is CMD's.
``scripts/test.sh`` runs the engine tier this way when ``INPROC_TEST_SLOWDOWN=burn``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

from tests.load import burning


def parse(argv: list[str]) -> argparse.Namespace:
    """The options, and CMD (everything from the first word that is not an option)."""
    p = argparse.ArgumentParser(prog="python -m tests.slowed", description=__doc__.split("\n")[0])
    p.add_argument("--cpus", default=None, help="CPUs to bind CMD and the burners to, comma-separated (default: the first)")
    p.add_argument("--burners", type=int, default=2, help="CPU burners sharing those CPUs with CMD (default 2)")
    p.add_argument("--max-s", type=float, default=7200.0, help="the burners end after this many seconds at the latest")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="the command to run")
    args = p.parse_args(argv)
    args.cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not args.cmd:
        p.error("give the command to run")
    if args.burners < 0 or not args.max_s > 0:
        p.error("--burners must be at least 0 and --max-s above 0")
    return args


def main(argv: list[str]) -> int:
    """Bind this process to the CPUs, start the burners, run CMD to its end; CMD's exit status."""
    args = parse(argv)
    cpus = {int(c) for c in args.cpus.split(",")} if args.cpus else {min(os.sched_getaffinity(0))}
    os.sched_setaffinity(0, cpus)  # inherited by the burners and by CMD and every process it starts
    with burning(args.burners, args.max_s):
        return subprocess.run(args.cmd).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
