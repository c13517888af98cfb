"""The GPU sampler's own process: NVML's cost kept out of the engine's process.

``python -m inproc.telemetry.gpu_process CONFIG_JSON`` is spawned once per run by
``inproc.telemetry.gpu_sampler.GpuProcess``. It lowers its own priority (``nice``), moves to the
cores the engine's process does not use when the machine has some (``placement`` in its ready
line says what it did), opens the NVML binding named in the config (``pynvml``, or a stand-in
module such as the tests' fake), and then obeys one-line commands on stdin:

``start PATH T_S``  a cell begins: energy read at its edge (labelled ``start``), first sample,
                    then the answer line ``started``; samples follow every 1/hz s, appended to PATH
``edge LABEL T_S``  read every GPU's energy counter now (a window opened or closed at ``T_S``);
                    no answer, so the engine's process never waits on NVML
``stop T_S``        a closing sample (every probe), the ``stop`` energy reads, then one JSON
                    status line (per-GPU probe errors, each field's latencyUsec, own CPU time)
``quit`` / EOF      exit

Rows go to PATH as they are taken (one ``os.write`` per sample or edge, float64, ``ROW_FIELDS``
then the ``GPU_COLUMNS`` values, NaN where not read), so a sampler killed mid-cell loses nothing
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
from inproc.telemetry.trace import GPU_COLUMNS

# Row layout before the GPU columns: kind (0 sample, 1 energy read at an edge), the GPU's slot,
# when its reads began and ended, this process's CPU seconds so far, the edge's label code and
# the engine's timestamp of that edge (NaN for samples).
ROW_FIELDS = ("kind", "slot", "t_s", "t_end_s", "cpu_s", "label", "t_mark_s")
ROW_WIDTH = len(ROW_FIELDS) + len(GPU_COLUMNS)
EDGE_LABELS = ("start", "open", "close", "stop")
_ENERGY_COL = len(ROW_FIELDS) + [c for c, _ in GPU_COLUMNS].index("energy_mj")
NICE = 10
_CAPACITY = 64  # a cell's series buffer starts with this many samples and doubles


class GpuSampling:
    """The readers of the sampled GPUs and the file their rows go to; driven by :func:`serve` (or a test)."""

    def __init__(self, readers: list[GpuReader]) -> None:
        self.readers = readers
        self._fd: int | None = None
        self.missed_ticks = 0

    def start(self, path: str, t_mark_s: float) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.missed_ticks = 0
        for reader in self.readers:
            reader.new_cell()
        self.edge("start", t_mark_s)
        self.sample()

    def sample(self, closing: bool = False) -> None:
        """One sample of every GPU, each stamped just before its first read, written as one block."""
        rows = np.full((len(self.readers), ROW_WIDTH), np.nan)
        for slot, reader in enumerate(self.readers):
            t_s = time.perf_counter()
            reader.take(t_s, closing)
            i = reader.buffer.n - 1
            values = [reader.buffer.values[c][i] if reader.buffer.ok[c][i] else np.nan for c, _ in GPU_COLUMNS]
            rows[slot, : len(ROW_FIELDS)] = (0, slot, t_s, time.perf_counter(), time.process_time(), np.nan, np.nan)
            rows[slot, len(ROW_FIELDS):] = values
        self._write(rows)

    def edge(self, label: str, t_mark_s: float) -> None:
        """Read every GPU's energy counter now, for the window edge the engine marked at ``t_mark_s``."""
        rows = np.full((len(self.readers), ROW_WIDTH), np.nan)
        code = EDGE_LABELS.index(label) if label in EDGE_LABELS else -1
        for slot, reader in enumerate(self.readers):
            try:
                t0, t1, mj = reader.read_energy()
            except Exception:  # a failed read leaves that GPU's edge out; the figure says it is absent
                continue
            rows[slot, : len(ROW_FIELDS)] = (1, slot, t0, t1, time.process_time(), code, t_mark_s)
            rows[slot, _ENERGY_COL] = mj
        self._write(rows[~np.isnan(rows[:, 0])])

    def stop(self, t_mark_s: float, pids: Iterable[int] = ()) -> dict[str, Any]:
        """The closing sample and read; the status, with the GPUs' compute processes not among ``pids``."""
        self.sample(closing=True)
        self.edge("stop", t_mark_s)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        others = other_compute_processes(self.readers[0].nvml, [(r.index, r.handle) for r in self.readers], pids) \
            if self.readers and pids else ()
        return {"cpu_s": time.process_time(), "missed_ticks": self.missed_ticks,
                "gpus": [_status(r) for r in self.readers], "others": list(others)}

    def _write(self, rows: np.ndarray) -> None:
        if self._fd is not None and rows.size:
            os.write(self._fd, rows.tobytes())


def _status(reader: GpuReader) -> dict[str, Any]:
    series = reader.buffer.snapshot(reader.probes)
    return {"index": reader.index, "power_source": reader.trace().power_source if reader.buffer.n else "none",
            "unsupported": dict(series.unsupported), "read_errors": dict(series.read_errors),
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


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    placement = place(config.get("cores"))
    readers, absent = open_readers(config)
    if not readers:
        _answer(sys.stdout, json.dumps({"ready": False, "reason": absent or "no GPU selected"}))
        return 0
    gpus = [{"index": r.index, "name": r.name, "uuid": r.uuid, "default_sm_clock_mhz": r.default_sm_clock_mhz}
            for r in readers]
    _answer(sys.stdout, json.dumps({"ready": True, "gpus": gpus, "placement": placement}))
    serve(GpuSampling(readers), float(config["hz"]), sys.stdin.fileno(), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
