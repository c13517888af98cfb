"""``inproc worker PROFILE --node-rank R``: this node's ranks of a multi-node engine, until the head is gone.

The head (node rank 0) runs ``inproc run`` or ``inproc cell`` with the same profile; the
engine's own launcher starts the ranks here and they join the head's rendezvous. The
ranks are spawned processes, which import the main module again: ``python -m inproc``
and the ``inproc`` script both keep their entry behind ``if __name__ == "__main__"``.
"""
from __future__ import annotations

import click

from inproc import engines
from inproc.profiles.spec import load_with_overrides


@click.command(short_help="Start this node's ranks of a multi-node engine.")
@click.argument("profile_path", metavar="PROFILE")
@click.option("--node-rank", type=click.IntRange(min=0), required=True,
              help="This node's rank among the profile's nnodes (1..N-1; the head, node 0, runs 'inproc run').")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override an engine argument or env.NAME, as 'inproc run --set' does (repeatable).")
def worker(profile_path: str, node_rank: int, sets: tuple[str, ...]) -> int:
    """Start this node's ranks of a multi-node engine with the engine's own launcher; exit when the head does."""
    profile = load_with_overrides(profile_path, sets)

    def echo(line: str) -> None:
        click.echo(f"inproc worker: {line}", err=True)

    return engines.run_worker(profile.launch, node_rank, echo)
