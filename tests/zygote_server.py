"""The fork server behind :mod:`tests.zygote`: imports inproc's CLI and vLLM once, then forks one ``python -m inproc`` per request.

Run as ``python -m tests.zygote_server SOCKET`` with the environment the engine would be
imported under. It imports :data:`IMPORTS` while recording every environment variable read
(Python-level ``os.environ`` reads), writes one JSON line to stdout (the names read, the
variables the imports set, its ``PYTHONPATH``, its threads) and then serves requests on the
``SOCK_SEQPACKET`` socket: a JSON message (argv, environment, cwd) with three file
descriptors (stdin, stdout, stderr) attached. It answers ``{"pid": …}`` on the same
connection at once and ``{"status": …}`` (the raw ``waitpid`` status) when the child ends.

It starts no threads of its own and runs no torch op before forking: the libraries imported
start only pools that are fork-safe by their own ``pthread_atfork`` handlers (OpenBLAS's,
OpenCV's) and jemalloc's background thread; the ready line names every thread there is.
"""
from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import selectors
import socket
import sys
import threading
import traceback

#: What a ``python -m inproc`` child that builds a vLLM engine imports before its real work, in its order.
IMPORTS = ("inproc.cli.main", "inproc.engines.vllm", "inproc.engines.vllm.engine", "inproc.engines.vllm.args",
           "vllm", "vllm.engine.arg_utils", "vllm.v1.engine.llm_engine")
#: How often the server looks for children that ended and for a parent that is gone, seconds.
POLL_S = 0.05


class _ReadRecorder(type(os.environ)):
    """``os.environ`` that remembers each name read (``[]``, ``get``, ``in``, ``setdefault``).

    A whole-environment walk (``items()``, ``dict(os.environ)``) is not a read of every name:
    the modules that walk it while importing (tqdm and networkx scanning for their prefixes,
    ``platform`` and ``wsgiref`` copying it) are named in ``walks`` instead.
    """

    def __init__(self, environ, reads: set[str], walks: set[str]):
        super().__init__(environ._data, environ.encodekey, environ.decodekey, environ.encodevalue, environ.decodevalue)
        self._reads, self._walks, self._walking, self._listed = reads, walks, 0, []

    def _walker(self) -> None:
        frame = sys._getframe(2)
        while frame is not None and frame.f_globals.get("__name__") in ("_collections_abc", "os", __name__):
            frame = frame.f_back
        self._walks.add(frame.f_globals.get("__name__", "?") if frame is not None else "?")

    def __iter__(self):
        self._walker()
        self._walking += 1
        try:
            yield from super().__iter__()
        finally:
            self._walking -= 1

    def keys(self):
        """``dict(os.environ)`` lists the keys first, then reads each in order: those reads are the walk's."""
        self._walker()
        self._listed = list(super().__iter__())[::-1]
        return self._listed[::-1]

    def __getitem__(self, key):
        if self._listed and self._listed[-1] == key:
            self._listed.pop()
        elif not self._walking:
            self._listed = []
            self._reads.add(str(key))
        return super().__getitem__(key)

    def __contains__(self, key):
        self._reads.add(str(key))
        return super().__contains__(key)


def import_all() -> dict:
    """Import :data:`IMPORTS`; what they read from and wrote to the environment, and the threads running after."""
    before, reads, walks, real = dict(os.environ), set(), set(), os.environ
    os.environ = _ReadRecorder(real, reads, walks)  # os.getenv and os.environ.get read through this name
    try:
        for name in IMPORTS:
            importlib.import_module(name)
    finally:
        os.environ = real
    after = dict(os.environ)
    threads = [open(f"/proc/self/task/{t}/comm").read().strip() for t in sorted(os.listdir("/proc/self/task"))]
    return {"reads": sorted(reads), "walks": sorted(walks), "set": {k: v for k, v in after.items() if before.get(k) != v},
            "unset": sorted(before.keys() - after.keys()), "python_threads": threading.active_count(),
            "threads": threads, "pythonpath": os.environ.get("PYTHONPATH", "")}


def _exit_code(code: object) -> int:
    """The exit status the interpreter gives a ``SystemExit`` code (a non-int is printed to stderr, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _end(code: int) -> None:
    """End the child as the interpreter would after its main module: threads joined, exit handlers, flush."""
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _child(request: dict, fds: list[int], setting: dict) -> None:
    """In the forked child: take the request's fds, cwd, environment and path, then run ``python -m inproc``."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ.update(setting["set"])  # what the imports set (vLLM's env overrides), as a fresh child's would
    for name in setting["unset"]:
        os.environ.pop(name, None)
    ours = [p for p in setting["pythonpath"].split(os.pathsep) if p]
    theirs = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *theirs, *sys.path[1 + len(ours):]]  # `python -m`: cwd, PYTHONPATH, the rest
    importlib.invalidate_caches()
    if "numpy" in sys.modules:  # a fresh process seeds numpy's global generator from the OS; a fork would share one
        sys.modules["numpy"].random.seed()
    if not sys.stdout.write_through:  # -u or PYTHONUNBUFFERED: as the server was started
        sys.stdout.reconfigure(line_buffering=os.isatty(1))
    sys.argv = ["-m", *request["args"]]
    try:
        runpy.run_module("inproc", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as e:
        code = _exit_code(e.code)
    except BaseException:  # as the interpreter does: the traceback on stderr, status 1
        traceback.print_exc()
        code = 1
    _end(code)


def _serve_one(conn: socket.socket, setting: dict, own: list) -> int:
    """Receive one request on ``conn`` and fork its child (which closes ``own``: the server's sockets); its pid."""
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    request = json.loads(data)
    sys.stdout.flush(), sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            for s in own:
                s.close()
            _child(request, fds, setting)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(70)  # only if _child itself failed before running inproc
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode())
    return pid


def serve(listener: socket.socket, setting: dict) -> None:
    """Serve requests on ``listener`` until the parent process is gone."""
    parent = os.getppid()
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    waiting: dict[int, socket.socket] = {}
    while os.getppid() == parent:
        for _key, _ in sel.select(POLL_S):
            conn, _ = listener.accept()
            try:
                waiting[_serve_one(conn, setting, [sel, listener, conn, *waiting.values()])] = conn
            except (OSError, ValueError):
                conn.close()
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(json.dumps({"status": status}).encode())
                except OSError:  # the test stopped listening: nothing to tell
                    pass
                conn.close()


def main(argv: list[str]) -> int:
    setting = import_all()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(argv[0])
    listener.listen(16)
    print(json.dumps(setting), flush=True)  # the client connects once it reads this line
    if setting["python_threads"] != 1:
        return 1  # the client reads the count and falls back: forking a threaded Python is not exact
    try:
        serve(listener, setting)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the tests' run is ending
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
