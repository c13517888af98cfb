"""What a worker node of every engine shares: its checks, and running until the head is gone.

On a node other than the head, ``inproc worker`` starts the engine's own ranks for that
node (vLLM's headless executor, SGLang's launcher) and then waits here. Neither engine
ends those ranks when the head goes away on its own: vLLM's headless workers block on
the head's broadcast for good (vllm-project/vllm#32136), and SGLang leaves that to "the
orchestrator's kill timeout". So the worker watches two things: its ranks (one that
exits ends the node) and the head's rendezvous port, the TCPStore that torch's process
group keeps on global rank 0 for as long as the head runs. A refused connection there
means the head has gone; the worker then stops its ranks and exits. Plain Python only.
"""
from __future__ import annotations

import contextlib
import multiprocessing.connection
import signal
import socket
import threading
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from inproc.errors import UsageError

#: Seconds between looks at the head's rendezvous port.
HEAD_POLL_S = 1.0
#: A look that takes longer than this counts as "not answering" (a dead host, not a refusal).
CONNECT_TIMEOUT_S = 3.0
#: Looks in a row that must fail before the head counts as gone (a busy head may be slow to accept).
MISSES_TO_GIVE_UP = 3

Echo = Callable[[str], None]


@dataclass(frozen=True)
class NodeEnd:
    """Why a worker node stopped, and the exit status ``inproc worker`` returns."""

    reason: str
    exit_code: int


def check_worker_rank(node_rank: int, nnodes: int, profile_hint: str) -> None:
    """A worker's node rank must be one of the profile's nodes other than the head's (0)."""
    if nnodes < 2:
        raise UsageError(f"The profile runs on one node (nnodes = {nnodes}): there is no other node for inproc worker "
                         f"to start. Set nnodes (and the rendezvous address) in the profile, e.g. {profile_hint}.")
    if node_rank == 0:
        raise UsageError("Node rank 0 is the head: run `inproc run PROFILE` (or `inproc cell`) there, and "
                         f"`inproc worker PROFILE --node-rank R` with R in 1..{nnodes - 1} on the other nodes.")
    if not 0 < node_rank < nnodes:
        raise UsageError(f"Bad --node-rank {node_rank}: the profile has nnodes = {nnodes}, so worker node ranks are "
                         f"1..{nnodes - 1} (node 0 is the head).")


def check_head_rank(node_rank: int, nnodes: int) -> None:
    """``inproc run`` builds the head; a profile naming another node rank is for ``inproc worker``."""
    if node_rank != 0:
        raise UsageError(f"Engine argument node-rank = {node_rank}: inproc run and inproc cell build the head (node "
                         f"rank 0) of the {nnodes} nodes. On node {node_rank} run `inproc worker PROFILE --node-rank "
                         f"{node_rank}`; leave node-rank out of the profile (or set it to 0).")


def port_open(host: str, port: int, timeout_s: float = CONNECT_TIMEOUT_S) -> bool:
    """True when something accepts a TCP connection at ``host:port`` (closed again at once)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def _handling(handler) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _exit(signum, frame) -> None:
    raise SystemExit(128 + signum)


def exit_on_signals():
    """While the ranks start: SIGINT and SIGTERM raise SystemExit, so the engine's own clean-up of
    half-started ranks runs (``run_headless`` does the same); a plain SIGTERM would orphan them."""
    return _handling(_exit)


class Stop(threading.Event):
    """Set by a signal; ``signum`` says which (the exit status is 128 + signum, as a shell reports it)."""

    signum: int = signal.SIGINT

    def by(self, signum, frame) -> None:
        self.signum = signum
        self.set()


@contextlib.contextmanager
def stop_on_signals() -> Iterator[Stop]:
    """While the ranks run: SIGINT and SIGTERM set the event, and :func:`wait_for_head` returns."""
    stop = Stop()
    with _handling(stop.by):
        yield stop


def wait_for_head(procs: Sequence, host: str, port: int, stop: threading.Event,
                  poll_s: float = HEAD_POLL_S, probe: Callable[[str, int], bool] = port_open) -> NodeEnd:
    """Block until one of this node's rank processes exits, the head's rendezvous port closes, or ``stop``.

    ``procs`` are ``multiprocessing.Process`` objects (their sentinels are waited on).
    """
    sentinels = {p.sentinel: p for p in procs}
    misses = 0
    while True:
        ended = multiprocessing.connection.wait(list(sentinels), timeout=poll_s)
        if ended:
            proc = sentinels[ended[0]]
            proc.join(10.0)  # its sentinel is ready: it has ended; join reaps it and reads its status
            code = proc.exitcode
            return NodeEnd(f"rank process {proc.name} (pid {proc.pid}) exited with status {code}", 0 if code == 0 else 1)
        if stop.is_set():
            signum = int(getattr(stop, "signum", signal.SIGINT))
            return NodeEnd(f"stopped by {signal.Signals(signum).name}", 128 + signum)
        misses = 0 if probe(host, port) else misses + 1
        if misses >= MISSES_TO_GIVE_UP:
            return NodeEnd(f"the head is gone (its rendezvous {host}:{port} no longer answers)", 0)


def split_address(address: str, what: str) -> tuple[str, int]:
    """``HOST:PORT`` (IPv6 in brackets) as (host, port); a bad one is a one-line error naming ``what``."""
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"Bad {what} {address!r}: give HOST:PORT, e.g. 10.0.0.1:5000.")
    return host, int(port)
