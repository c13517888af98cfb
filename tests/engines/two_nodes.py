"""Two "nodes" on localhost for the multi-node engine tests: a head (``inproc cell``) and ``inproc worker``.

Every process either side starts is recorded while they run (an orphaned rank is
reparented away from its parent, so a look at the children afterwards would miss it),
and the test asserts that none of them is alive at the end. Whatever is left is killed by
pid, so a failing test leaves nothing behind on a machine others share.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import psutil

from tests.spawn import start_child


def free_port() -> int:
    """A TCP port nothing listens on right now (the rendezvous of one test)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Seen:
    """Processes seen under the head and the worker: pid -> create time (a pid may be reused)."""

    procs: dict[int, float] = field(default_factory=dict)

    def add_tree(self, pid: int) -> None:
        try:
            root = psutil.Process(pid)
            for p in [root, *root.children(recursive=True)]:
                self.procs.setdefault(p.pid, p.create_time())
        except psutil.Error:
            pass

    def alive(self) -> list[int]:
        left = []
        for pid, created in self.procs.items():
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    left.append(pid)
            except psutil.Error:
                continue
        return left

    def end(self, *launched: subprocess.Popen) -> None:
        """Kill the launched processes still running, then every process seen that is still alive."""
        for p in launched:
            if p.poll() is None:
                p.kill()
        for pid in self.alive():
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass


@dataclass
class TwoNodes:
    head_rc: int
    head_err: str
    worker_rc: int | None
    worker_err: str
    worker_exit_s: float | None  # seconds from the head's exit to the worker's
    left: list[int]  # processes of either side still alive after both ended


def run_two_nodes(head_args: list[str], worker_args: list[str], head_env: dict, worker_env: dict,
                  timeout_s: float = 600, worker_grace_s: float = 90) -> TwoNodes:
    """Start the worker, then the head; wait for both; say what was left running."""
    seen, stop = Seen(), threading.Event()
    cmd = [sys.executable, "-m", "inproc"]
    worker = start_child([*cmd, "worker", *worker_args], env=worker_env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    head = start_child([*cmd, *head_args], env=head_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def watch() -> None:
        while not stop.is_set():
            seen.add_tree(worker.pid)
            seen.add_tree(head.pid)
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    worker_err = []
    reader = threading.Thread(target=lambda: worker_err.append(worker.stderr.read()), daemon=True)
    reader.start()
    try:
        _, head_err = head.communicate(timeout=timeout_s)
        head_done = time.monotonic()
        try:
            worker.wait(timeout=worker_grace_s)
            worker_exit_s = time.monotonic() - head_done
        except subprocess.TimeoutExpired:
            worker_exit_s = None
        time.sleep(1.0)  # ranks killed last need a moment to be reaped
        stop.set()
        watcher.join()
        reader.join(timeout=10)
        return TwoNodes(head.returncode, head_err, worker.returncode, "".join(worker_err), worker_exit_s, seen.alive())
    finally:
        stop.set()
        seen.end(head, worker)
