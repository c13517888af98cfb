"""The tests' ``python -m inproc`` children forked from one process that imported vLLM already (:mod:`tests.zygote_server`).

A child that builds a vLLM engine spends seconds importing vLLM and torch before its real
work (``docs/measurements.md``); the engine tier starts dozens. :func:`why_not` decides per
child whether the fork server can stand in for a fresh interpreter exactly; when it cannot
(another command, a test marked ``engine_free``, SGLang's environment, an environment that
the engine's import would read differently, ``INPROC_TEST_NO_ZYGOTE=1``) the child is a
real subprocess, as before. :class:`ZygotePopen` is a ``subprocess.Popen`` whose pid is the
forked child's own (signals reach it), whose exit status the server reports.

The server is started on the first child it can serve, under the environment that child's
engine would be imported with, and lives until the test session ends.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Variables the server's recording of single reads cannot see: those native libraries read while they load (OpenMP,
#: BLAS, the loader, CUDA, torch, Python itself) and those found by scanning the environment for a prefix (tqdm's,
#: networkx's). A child must agree with the server on every one of them.
UNSEEN_PREFIXES = ("OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "DNNL_", "ONEDNN_", "LD_", "MALLOC_", "JEMALLOC",
                   "ARROW_", "CUDA_", "NCCL_", "TORCH", "PYTORCH", "PYTHON", "TQDM_", "NETWORKX_")
#: Keyword arguments of ``subprocess`` that a forked child honours as a fresh one would.
SERVED_KWARGS = frozenset({"stdin", "stdout", "stderr", "text", "universal_newlines", "encoding", "errors", "input",
                           "capture_output", "timeout", "check", "bufsize"})
#: Why the server cannot serve this session (it failed to start, or forking it would not be exact); "" while it can.
_broken = ""
_server: _Server | None = None


class _Server:
    """A running fork server: its process, socket, the environment it imported under and what that import read and set."""

    def __init__(self, import_env: dict[str, str]):
        self.folder = tempfile.mkdtemp(prefix="inproc-zygote-")
        self.path = os.path.join(self.folder, "socket")
        self.import_env = import_env
        with open(os.path.join(self.folder, "log"), "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "tests.zygote_server", self.path], cwd=ROOT,
                                         env=import_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
        ready, _, _ = select.select([self.proc.stdout], [], [], 600)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            self.stop()
            raise RuntimeError(f"the fork server did not start: {self.log_tail()}")
        self.setting = json.loads(line)
        self.reads = frozenset(self.setting["reads"])
        atexit.register(self.stop)

    def log_tail(self) -> str:
        try:
            return Path(self.folder, "log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def sensitive(self, name: str) -> bool:
        """Whether the engine's import read ``name`` (or a native library may have)."""
        return name in self.reads or name.startswith(UNSEEN_PREFIXES)

    def differs(self, import_env: dict[str, str]) -> list[str]:
        """Names whose values at import would differ between this server and a child imported under ``import_env``."""
        names = (import_env.keys() | self.import_env.keys()) - {"PYTHONPATH"}
        out = [n for n in sorted(names) if self.sensitive(n) and import_env.get(n) != self.import_env.get(n)]
        ours = self.import_env.get("PYTHONPATH", "").split(os.pathsep)
        if import_env.get("PYTHONPATH", "").split(os.pathsep)[:len(ours)] != ours:
            out.append("PYTHONPATH")  # the server's modules must be the ones the child would find first
        return out

    def fork(self, args: list[str], cwd: str, env: dict[str, str], fds: list[int]) -> tuple[int, socket.socket]:
        """A child running ``python -m inproc ARGS`` with these stdin/stdout/stderr fds; its pid and its connection."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(self.path)
            socket.send_fds(conn, [json.dumps({"args": args, "cwd": cwd, "env": env}).encode()], fds)
            reply = conn.recv(4096)
            if not reply:
                raise OSError(f"the fork server closed the connection: {self.log_tail()}")
            return json.loads(reply)["pid"], conn
        except BaseException:
            conn.close()
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def import_env(args: list[str], env: dict[str, str]) -> dict[str, str]:
    """The environment a ``python -m inproc ARGS`` child would import vLLM under: ``env``, then the profiles' ``[env]``
    and ``--set env.NAME=VALUE``, then what the vLLM adapter sets before its import (``build_vllm_engine``, ``quiet``)."""
    from inproc.engines.vllm import ADAPTER
    from inproc.profiles.spec import load_profile

    out = dict(env)
    for i, arg in enumerate(args):
        if arg.endswith(".toml") and os.path.isfile(arg):
            try:
                out.update(load_profile(Path(arg)).env)
            except Exception:  # the child refuses it before importing anything
                pass
        if args[i - 1:i] == ["--set"] and arg.startswith("env.") and "=" in arg:
            name, value = arg[len("env."):].split("=", 1)
            out[name] = value
    out["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    for name, value in ADAPTER.quiet_env.items():
        out.setdefault(name, value)
    return out


def why_not(cmd: list[str], env: dict[str, str], kwargs: dict, engine_free: bool) -> str:
    """Why this child must be a fresh process ("" when the fork server stands in for it exactly)."""
    from tests.conftest import INSTALLED

    if os.environ.get("INPROC_TEST_NO_ZYGOTE") == "1":
        return "INPROC_TEST_NO_ZYGOTE=1"
    if [str(c) for c in cmd[:3]] != [sys.executable, "-m", "inproc"]:
        return "not python -m inproc with this interpreter"
    if engine_free:
        return "the test is marked engine_free: its children must not be able to import an engine"
    if not INSTALLED["vllm"] or INSTALLED["sglang"]:
        return "the fork server holds vLLM: this environment is not vLLM's alone"
    if not SERVED_KWARGS.issuperset(kwargs):
        return f"subprocess arguments {sorted(set(kwargs) - SERVED_KWARGS)}"
    if server() is None:
        return _broken
    differs = _server.differs(import_env([str(a) for a in cmd[3:]], env))
    if differs:
        return f"the engine's import would read other values of {', '.join(differs[:5])}"
    return ""


def server(env: dict[str, str] | None = None) -> _Server | None:
    """The session's fork server (``None`` if it cannot run), started if none runs under the import environment of the
    default profile's command with ``env`` (by default a test's child's, :func:`tests.spawn.child_env`)."""
    global _server, _broken
    if _server is None and not _broken:
        from tests.conftest import DEFAULT_PROFILE
        from tests.spawn import child_env

        try:
            _server = _Server(import_env([str(DEFAULT_PROFILE)], child_env() if env is None else env))
        except (OSError, RuntimeError, ValueError) as e:
            _broken = f"the fork server is unavailable ({e})"
            return None
        if _server.setting["python_threads"] != 1:
            _broken = f"importing vLLM started Python threads: {_server.setting['threads']}"
            _server.stop()
            _server = None
    return _server


def serves(cmd: list[str], env: dict[str, str], kwargs: dict, engine_free: bool) -> bool:
    """Whether this child is forked by the fork server; the reason when it is not goes to the file named by
    ``INPROC_TEST_ZYGOTE_LOG``, if set (one line per child)."""
    why = why_not(cmd, env, kwargs, engine_free)
    log = os.environ.get("INPROC_TEST_ZYGOTE_LOG")
    if log:
        with open(log, "a") as f:
            what = " ".join(map(str, cmd[1:5])).replace("\n", " ")
            f.write(f"{'forked' if not why else 'fresh: ' + why}\t{what}\n")
    return not why


class ZygotePopen(subprocess.Popen):
    """``python -m inproc ARGS`` forked by the fork server: a real pid, its status as the server's ``waitpid`` saw it."""

    def _execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo, creationflags,
                       shell, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite, *_rest):
        fds = [p2cread if p2cread != -1 else 0, c2pwrite if c2pwrite != -1 else 1, errwrite if errwrite != -1 else 2]
        args = [str(a) for a in args]
        self.pid, self._conn = server().fork(args[3:], str(cwd), dict(env), fds)
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)

    def _try_wait(self, wait_flags):
        """The server's report of the child's end: ``(pid, status)``, or ``(0, 0)`` with ``WNOHANG`` before it ended."""
        self._conn.setblocking(not wait_flags & os.WNOHANG)
        try:
            reply = self._conn.recv(4096)
        except BlockingIOError:
            return 0, 0
        self._conn.close()
        if not reply:  # the server is gone, so its children's statuses are lost: report a kill
            return self.pid, 9
        return self.pid, json.loads(reply)["status"]

    def _internal_poll(self, _deadstate=None, **_unused):
        if self.returncode is None and self._waitpid_lock.acquire(False):
            try:
                if self.returncode is None and self._conn.fileno() != -1:
                    pid, status = self._try_wait(os.WNOHANG)
                    if pid == self.pid:
                        self._handle_exitstatus(status)
            finally:
                self._waitpid_lock.release()
        return self.returncode


def run(cmd: list[str], *, input=None, timeout: float | None = None, check: bool = False, capture_output: bool = False,
        **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` with :class:`ZygotePopen` (the same steps: communicate, kill on timeout, status)."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with ZygotePopen(cmd, **kwargs) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        except BaseException:
            proc.kill()
            raise
        code = proc.poll()
    if check and code:
        raise subprocess.CalledProcessError(code, proc.args, out, err)
    return subprocess.CompletedProcess(proc.args, code, out, err)
