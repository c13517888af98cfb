"""What ends a worker node (``inproc.engines.nodes``), with real processes and a real listening port."""
from __future__ import annotations

import multiprocessing as mp
import signal
import socket
import threading
import time

import pytest

from inproc.engines import nodes
from inproc.errors import UsageError


def _sleep(seconds: float, code: int) -> None:
    time.sleep(seconds)
    raise SystemExit(code)


@pytest.fixture(scope="module", autouse=True)
def no_tracker_left():
    """Spawning the stand-in ranks starts multiprocessing's resource tracker; stop it if this module did.

    A tracker left running is a child of the test process, which later tests that check for
    leftover children would count.
    """
    from multiprocessing import resource_tracker

    started_here = resource_tracker._resource_tracker._pid is None
    yield
    if started_here and resource_tracker._resource_tracker._pid is not None:
        resource_tracker._resource_tracker._stop()


@pytest.fixture()
def head():
    """A listening socket standing in for the head's rendezvous (torch's TCPStore accepts like this)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield server, stop
    stop.set()
    t.join()
    server.close()


def rank(seconds: float, code: int = 0):
    proc = mp.get_context("spawn").Process(target=_sleep, args=(seconds, code), name="rank-test")
    proc.start()
    return proc


def test_the_worker_ends_when_the_head_port_closes(head):
    server, stop_accepting = head
    port = server.getsockname()[1]
    proc = rank(60)
    try:
        closer = threading.Timer(1.0, lambda: (stop_accepting.set(), server.close()))
        closer.start()
        t0 = time.monotonic()
        end = nodes.wait_for_head([proc], "127.0.0.1", port, threading.Event(), poll_s=0.2)
        waited = time.monotonic() - t0
        assert "the head is gone" in end.reason and end.exit_code == 0
        assert 1.0 <= waited < 1.0 + 0.2 * (nodes.MISSES_TO_GIVE_UP + 3)
        assert proc.is_alive()  # the caller stops its ranks
    finally:
        proc.kill()
        proc.join()


def test_the_worker_ends_when_one_of_its_ranks_exits(head):
    server, _ = head
    failing = rank(0.5, 3)
    end = nodes.wait_for_head([failing], "127.0.0.1", server.getsockname()[1], threading.Event(), poll_s=0.2)
    assert end.exit_code == 1 and "exited with status 3" in end.reason
    clean = rank(0.5, 0)
    end = nodes.wait_for_head([clean], "127.0.0.1", server.getsockname()[1], threading.Event(), poll_s=0.2)
    assert end.exit_code == 0 and "exited with status 0" in end.reason


def test_the_wait_goes_on_while_the_head_answers_and_stops_on_a_signal(head):
    server, _ = head
    proc = rank(60)
    stop = nodes.Stop()
    try:
        threading.Timer(1.5, lambda: stop.by(signal.SIGTERM, None)).start()
        t0 = time.monotonic()
        end = nodes.wait_for_head([proc], "127.0.0.1", server.getsockname()[1], stop, poll_s=0.2)
        assert end.exit_code == 128 + signal.SIGTERM and "SIGTERM" in end.reason and time.monotonic() - t0 >= 1.5
    finally:
        proc.kill()
        proc.join()


@pytest.mark.parametrize("rank_,nnodes,needle", [
    (1, 1, "runs on one node (nnodes = 1)"), (0, 2, "Node rank 0 is the head"), (2, 2, "Bad --node-rank 2"),
    (5, 4, "Bad --node-rank 5: the profile has nnodes = 4, so worker node ranks are 1..3"),
])
def test_worker_node_ranks(rank_, nnodes, needle):
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        nodes.check_worker_rank(rank_, nnodes, "nnodes = 2")
    nodes.check_worker_rank(1, 2, "")
    nodes.check_worker_rank(3, 4, "")


def test_the_head_is_node_rank_0():
    nodes.check_head_rank(0, 2)
    with pytest.raises(UsageError, match="inproc worker PROFILE --node-rank 1"):
        nodes.check_head_rank(1, 2)


@pytest.mark.parametrize("text,expected", [("10.0.0.1:5000", ("10.0.0.1", 5000)), ("[::1]:29500", ("::1", 29500)),
                                           ("head-node:1", ("head-node", 1))])
def test_split_address(text, expected):
    assert nodes.split_address(text, "dist-init-addr") == expected


@pytest.mark.parametrize("text", ["10.0.0.1", ":5000", "host:port", "host:0", "host:70000", ""])
def test_bad_address(text):
    with pytest.raises(UsageError, match=f"Bad dist-init-addr {text!r}: give HOST:PORT"):
        nodes.split_address(text, "dist-init-addr")
