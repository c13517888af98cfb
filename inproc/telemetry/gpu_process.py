"""The sampler's own process: NVML's and psutil's cost kept out of the engine's process.

``python -m inproc.telemetry.gpu_process CONFIG_JSON`` is spawned once per run by
``inproc.telemetry.gpu_sampler.GpuProcess``. It lowers its own priority (``nice``), moves to the
cores the engine's process does not use when the machine has some (``placement`` in its ready
line says what it did), opens the NVML binding named in the config (``pynvml``, or a stand-in
module such as the tests' fake) and, when the config names the engine's pid (``host_pid``), a
host reader of that process and of all CPUs (``inproc.telemetry.host_reader``). It serves
with either alone (no GPU: the host; no psutil: the GPUs). Then it obeys one-line commands on stdin:

``start PATH T_S``  a cell begins: the ``start`` edge (below) is its first sample, then the answer
                    line ``started``; samples follow every 1/hz s, appended to PATH
``edge LABEL T_S``  an edge (a window opened or closed at ``T_S``): every GPU's energy counter read
                    now, then every probe of every GPU and of the host; no answer, so the engine's
                    process never waits on NVML
``stop T_S``        the ``stop`` edge, the cell's closing sample, then one JSON status line (per-GPU
                    and host probe errors, each field's latencyUsec, own CPU time)
``quit`` / EOF      exit

Rows go to PATH as they are taken (one ``os.write`` per sample or edge, float64, ``ROW_FIELDS``
then the ``GPU_COLUMNS`` values, NaN where not read; a host row, kind 2, holds the ``HOST_COLUMNS``
values in the first value slots), so a sampler killed mid-cell loses nothing
it had written. float64 holds the uint64 columns exactly below 2**53: the energy counter (mJ since
the driver loaded) gets there after 285,000 years at 1 kW, and the reason bits are far below. Every time is ``time.perf_counter()``, which on Linux is CLOCK_MONOTONIC, one clock
for every process of the machine: the engine's window edges and these samples line up.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from typing import Any, Iterable

import numpy as np

from inproc.telemetry.gpu_procs import other_compute_processes
from inproc.telemetry.gpu_reader import GpuReader, load_nvml, select_handles
from inproc.telemetry.host_reader import HostReader, open_host_reader
from inproc.telemetry.series import ProbeSource, SeriesBuffer, probe_problems
from inproc.telemetry.trace import GPU_COLUMNS, HOST_COLUMNS

# Row layout before the GPU columns: kind (0 GPU sample, 1 energy read at an edge, 2 host sample), the GPU's slot,
# when its reads began and ended, this process's CPU seconds so far, the edge's label code and
# the engine's timestamp of that edge (NaN for samples).
ROW_FIELDS = ("kind", "slot", "t_s", "t_end_s", "cpu_s", "label", "t_mark_s")
ROW_WIDTH = len(ROW_FIELDS) + len(GPU_COLUMNS)
EDGE_LABELS = ("start", "open", "close", "stop")
_ENERGY_COL = len(ROW_FIELDS) + [c for c, _ in GPU_COLUMNS].index("energy_mj")
KIND_GPU, KIND_EDGE, KIND_HOST = 0, 1, 2
assert len(HOST_COLUMNS) <= len(GPU_COLUMNS)  # a host row's values fit in a GPU row's slots
NICE = 10
_CAPACITY = 64  # a cell's series buffer starts with this many samples and doubles


class GpuSampling:
    """The readers of the sampled GPUs and of the host, and the file their rows go to; driven by :func:`serve`
    (or a test)."""

    def __init__(self, readers: list[GpuReader], host: HostReader | None = None) -> None:
        self.readers = readers
        self.host = host
        self._fd: int | None = None
        self.missed_ticks = 0

    def start(self, path: str, t_mark_s: float) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.missed_ticks = 0
        for reader in self.readers:
            reader.new_cell()
        if self.host is not None:
            self.host.new_cell()  # lists the engine's children, this process among them
        self.edge("start", t_mark_s)  # the cell's first sample

    def sample(self) -> None:
        """One sample of every GPU and of the host, each stamped just before its first read, written as one block."""
        rows = np.full((len(self.readers), ROW_WIDTH), np.nan)
        for slot, reader in enumerate(self.readers):
            self._gpu_row(rows[slot], slot, reader, False)
        self._write(rows if self.host is None else np.vstack([rows, self._host_row(False, np.nan, np.nan)]))

    @staticmethod
    def _gpu_row(row: np.ndarray, slot: int, reader: GpuReader, closing: bool, energy_mj: float | None = None) -> None:
        """One GPU sample into ``row``; ``energy_mj``: the energy just read at an edge (the counter not read again)."""
        t_s = time.perf_counter()
        reader.take(t_s, closing, {"energy": (energy_mj,)} if energy_mj is not None else None)
        row[: len(ROW_FIELDS)] = (KIND_GPU, slot, t_s, time.perf_counter(), time.process_time(), np.nan, np.nan)
        row[len(ROW_FIELDS):] = _last_values(reader.buffer, GPU_COLUMNS)

    def _host_row(self, closing: bool, code: float, t_mark_s: float) -> np.ndarray:
        """One host sample as a row (the values of the reads that failed or were skipped are NaN)."""
        row = np.full((1, ROW_WIDTH), np.nan)
        t_s = time.perf_counter()
        self.host.take(t_s, closing)
        row[0, : len(ROW_FIELDS)] = (KIND_HOST, -1, t_s, time.perf_counter(), time.process_time(), code, t_mark_s)
        row[0, len(ROW_FIELDS): len(ROW_FIELDS) + len(HOST_COLUMNS)] = _last_values(self.host.buffer, HOST_COLUMNS)
        return row

    def edge(self, label: str, t_mark_s: float) -> None:
        """Read every GPU's energy counter, then sample every GPU and the host in full, now, for the window edge
        the engine marked at ``t_mark_s`` (``start`` and ``stop``: the cell's first and closing samples).

        Every probe is read at an edge, the violation counters and the children's CPU among them, so a
        window's cumulative counters are read at its edges and need no faster sampling between them; the
        edge sample carries the energy just read (the 3 ms counter is not read twice).
        """
        edges = np.full((len(self.readers), ROW_WIDTH), np.nan)
        code = EDGE_LABELS.index(label) if label in EDGE_LABELS else -1
        energy: list[float | None] = [None] * len(self.readers)
        for slot, reader in enumerate(self.readers):
            try:
                t0, t1, mj = reader.read_energy()
            except Exception:  # a failed read leaves that GPU's edge out; the figure says it is absent
                continue
            edges[slot, : len(ROW_FIELDS)] = (KIND_EDGE, slot, t0, t1, time.process_time(), code, t_mark_s)
            edges[slot, _ENERGY_COL] = energy[slot] = mj
        samples = np.full((len(self.readers), ROW_WIDTH), np.nan)
        for slot, reader in enumerate(self.readers):
            self._gpu_row(samples[slot], slot, reader, True, energy[slot])  # None (its read failed): read again
        rows = [edges[~np.isnan(edges[:, 0])], samples]
        if self.host is not None:
            rows.append(self._host_row(True, code, t_mark_s))
        self._write(np.vstack(rows))

    def stop(self, t_mark_s: float, pids: Iterable[int] = ()) -> dict[str, Any]:
        """The stop reads and the closing sample; the status, with the GPUs' compute processes not among ``pids``."""
        self.edge("stop", t_mark_s)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        others = other_compute_processes(self.readers[0].nvml, [(r.index, r.handle) for r in self.readers], pids) \
            if self.readers and pids else ()
        host = _problems(self.host) if self.host is not None else None
        return {"cpu_s": time.process_time(), "missed_ticks": self.missed_ticks,
                "gpus": [_status(r) for r in self.readers], "others": list(others), "host": host}

    def _write(self, rows: np.ndarray) -> None:
        if self._fd is not None and rows.size:
            os.write(self._fd, rows.tobytes())


def _last_values(buffer: SeriesBuffer, columns) -> list[float]:
    """The buffer's last sample as floats in ``columns``' order, NaN where that read failed or was skipped."""
    i = buffer.n - 1
    return [buffer.values[c][i] if buffer.ok[c][i] else np.nan for c, _ in columns]


def _problems(source: ProbeSource) -> dict[str, dict[str, str]]:
    """A source's probes that are off and those whose reads failed, for the status line."""
    unsupported, read_errors = probe_problems(source.probes)
    return {"unsupported": unsupported, "read_errors": read_errors}


def _status(reader: GpuReader) -> dict[str, Any]:
    return {"index": reader.index, "power_source": reader.power_source if reader.buffer.n else "none",
            **_problems(reader),
            "field_latency_us": {str(k): v for k, v in reader.field_latency_us.items()},
            "violations": f"{reader.violation_source} (x{reader.violation_scale:g} to ns)"}


def place(cores: list[int] | None) -> str:
    """Lower this process's priority and move it to ``cores``; what was done, in words."""
    done = []
    try:
        os.nice(NICE)
        done.append(f"nice +{NICE}")
    except OSError as exc:
        done.append(f"nice failed ({exc})")
    if not cores:
        done.append("not pinned: the engine's process may use every core")
    elif hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, cores)
            done.append(f"pinned to cores {_ranges(cores)}, which the engine's process does not use")
        except OSError as exc:
            done.append(f"not pinned ({exc})")
    return "; ".join(done)


def _ranges(cores: list[int]) -> str:
    return ",".join(str(c) for c in cores) if len(cores) < 5 else f"{cores[0]}-{cores[-1]} ({len(cores)} cores)"


def open_readers(config: dict[str, Any]) -> tuple[list[GpuReader], str | None]:
    """Readers of the configured GPUs, or ``([], reason)``."""
    name = config.get("binding") or "pynvml"
    if name == "pynvml":
        binding, absent = load_nvml(None)
    else:
        try:
            module = __import__(name, fromlist=["_"])
        except ImportError as exc:
            return [], f"NVML binding {name!r} could not be imported ({exc})"
        binding, absent = load_nvml(module)
    if binding is None:
        return [], absent
    handles, absent = select_handles(binding, config.get("indices"))
    return [GpuReader(binding, index, handle, _CAPACITY) for index, handle in handles], absent


def serve(sampling: GpuSampling, hz: float, stdin_fd: int, out) -> None:
    """Sample at ``hz`` while a cell is open, obeying commands between ticks, until quit or EOF."""
    period, pending, next_tick, open_cell = 1.0 / hz, b"", 0.0, False
    while True:
        timeout = max(0.0, next_tick - time.perf_counter()) if open_cell else None
        ready, _, _ = select.select([stdin_fd], [], [], timeout)
        if ready:
            chunk = os.read(stdin_fd, 4096)
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                word, *args = line.decode().split()
                if word == "quit":
                    return
                if word == "start":
                    sampling.start(args[0], float(args[1]))
                    open_cell, next_tick = True, time.perf_counter() + period
                    _answer(out, "started")
                elif word == "edge":
                    sampling.edge(args[0], float(args[1]))
                elif word == "stop":
                    open_cell = False
                    pids = [int(p) for p in args[1].split(",")] if len(args) > 1 and args[1] != "-" else []
                    _answer(out, json.dumps(sampling.stop(float(args[0]), pids)))
            continue
        if open_cell:
            sampling.sample()
            next_tick += period
            now = time.perf_counter()
            if now > next_tick:  # the sample overran the next tick: skip the ticks it covered
                skipped = int((now - next_tick) / period) + 1
                sampling.missed_ticks += skipped
                next_tick += skipped * period


def _answer(out, line: str) -> None:
    out.write(line + "\n")
    out.flush()


def open_host(config: dict[str, Any]) -> tuple[HostReader | None, str | None]:
    """A reader of the engine's process ``host_pid`` and the host, or ``(None, reason)``."""
    pid = config.get("host_pid")
    return (None, "host sampling turned off") if pid is None else open_host_reader(_CAPACITY, int(pid))


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    placement = place(config.get("cores"))
    readers, gpu_absent = open_readers(config) if config.get("gpus", True) else ([], config.get("gpu_absent"))
    host, host_absent = open_host(config)
    if not readers and host is None:
        _answer(sys.stdout, json.dumps({"ready": False, "reason": gpu_absent or "no GPU selected",
                                        "host_absent": host_absent}))
        return 0
    gpus = [{"index": r.index, "name": r.name, "uuid": r.uuid, "default_sm_clock_mhz": r.default_sm_clock_mhz}
            for r in readers]
    _answer(sys.stdout, json.dumps({"ready": True, "gpus": gpus, "placement": placement,
                                    "gpu_absent": None if readers else (gpu_absent or "no GPU selected"),
                                    "host": host is not None, "host_absent": host_absent}))
    serve(GpuSampling(readers, host), float(config["hz"]), sys.stdin.fileno(), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
