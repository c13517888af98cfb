"""The engine's side of the sampler process (``inproc.telemetry.gpu_process``): GPUs and host.

:class:`GpuProcess` spawns the sampler once per run and talks to it through two pipes: a
command line to its stdin (a few microseconds of the engine's time), an answer line back only
at a cell's start and stop, which lie outside every window. At stop the rows the sampler
appended to the cell's file are read back into per-GPU series, energy reads and the host series
(the engine's process, its children and all CPUs, read from ``/proc`` by the sampler). The sampler
failing to start, dying or falling behind is data (``note``), never an exception.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from inproc.telemetry.gpu_process import EDGE_LABELS, KIND_EDGE, KIND_GPU, KIND_HOST, ROW_FIELDS, ROW_WIDTH
from inproc.telemetry.replies import STARTED, Replies
from inproc.telemetry.series import SampleSeries
from inproc.telemetry.trace import GPU_COLUMNS, HOST_COLUMNS, EnergyRead, GpuTrace

# How long the engine's process waits for the sampler's ready / started / stopped line. Spawning
# imports numpy and the binding (about a second on a busy machine); NVML's init can take longer.
READY_TIMEOUT_S = 60.0
ANSWER_TIMEOUT_S = 10.0
# A sampler that missed more than this share of a cell's ticks lagged (the cell's note says so).
LAG_SHARE = 0.05
_K = {name: i for i, name in enumerate(ROW_FIELDS)}


@dataclass(frozen=True)
class GpuCell:
    """What the sampler gave for one cell."""

    gpus: tuple[GpuTrace, ...]
    energy_reads: tuple[EnergyRead, ...]
    cpu_s: float | None  # the sampler process's CPU seconds during the cell
    missed_ticks: int
    note: str | None  # "GPU telemetry: sampler exited at 12.3 s (...)" and the like
    others: tuple[str, ...] = ()  # other programs' compute processes on the GPUs as the cell closed (gpu_procs)
    host: SampleSeries | None = None  # the host series, where the sampler reads the host


def spare_cores() -> list[int]:
    """Cores this machine has that the engine's process may not run on (none where it may use all)."""
    if not hasattr(os, "sched_getaffinity"):
        return []
    mine = os.sched_getaffinity(0)
    try:
        allowed = set(range(os.cpu_count() or 0))
        with open("/sys/fs/cgroup/cpuset.cpus.effective") as f:  # the cores a container may use
            allowed = _parse_cpus(f.read().strip()) or allowed
    except OSError:
        pass
    return sorted(allowed - mine)


def _parse_cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


class GpuProcess:
    """The spawned sampler of ``indices`` (None: the visible GPUs) through the binding module ``binding``, and of
    the host when ``host`` (this process by its pid, its children and all CPUs).

    ``absent_reason`` says why no sampler runs at all; ``gpu_absent_reason`` why it samples no GPU,
    ``host_absent_reason`` why it does not sample the host (it runs while it samples either).
    """

    def __init__(self, hz: float, binding: str | None = None, indices: list[int] | None = None,
                 host: bool = False) -> None:
        self.hz = hz
        self.absent_reason: str | None = None
        self.gpu_absent_reason: str | None = None
        self.host_absent_reason: str | None = None if host else "host sampling turned off"
        self.samples_host = False
        self.placement = ""
        self.gpus: list[dict[str, Any]] = []
        self._status: list[dict[str, Any]] = []  # the last stop's per-GPU status (kept if the sampler dies)
        self._dir = tempfile.mkdtemp(prefix="inproc-gpu-")
        self._path = ""
        self._t0_s = 0.0
        self._cpu0_s = 0.0
        binding = binding or os.environ.get("INPROC_NVML_BINDING") or "pynvml"
        config = {"hz": hz, "binding": binding, "indices": indices, "cores": spare_cores(),
                  "host_pid": os.getpid() if host else None}
        self._proc = None
        self._stderr = None
        self._replies: Replies | None = None
        if binding == "pynvml" and importlib.util.find_spec("pynvml") is None:  # the sampler opens no NVML
            config["gpus"] = False
            config["gpu_absent"] = self.gpu_absent_reason = (
                "NVML unavailable: nvidia-ml-py is not installed (No module named 'pynvml'; "
                "pip install 'inproc[nvml]')")
            if not host:  # no process to spawn for nothing
                self.absent_reason = self.gpu_absent_reason
                self.close()
                return
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._stderr = open(os.path.join(self._dir, "stderr"), "w+")
        self._proc = subprocess.Popen([sys.executable, "-m", "inproc.telemetry.gpu_process", json.dumps(config)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
                                      start_new_session=True)  # a Ctrl-C at the terminal is the run's to handle
        self._replies = Replies(self._proc.stdout.fileno())  # read from the fd alone, never the buffered file
        info = self._replies.answer(READY_TIMEOUT_S, "ready") or {}
        if not info.get("ready"):
            stray = self._replies.stray_note()
            why = info.get("reason") or f"sampler did not start: {self._why()}" + (f"; {stray}" if stray else "")
            self.absent_reason = self.gpu_absent_reason = why
            self.host_absent_reason = info.get("host_absent") or self.absent_reason
            self.close()
            return
        self.gpus, self.placement = info["gpus"], info["placement"]
        self.gpu_absent_reason = info.get("gpu_absent")
        self.samples_host = bool(info.get("host"))
        self.host_absent_reason = info.get("host_absent")

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, t_s: float) -> str | None:
        """Open a cell at ``t_s``; waits for the sampler's first sample. A note when it cannot."""
        self._path = os.path.join(self._dir, f"cell-{time.monotonic_ns()}.f8")
        self._t0_s = t_s
        if not self._send(f"start {self._path} {t_s!r}"):
            return self._dead_note()
        started = self._replies.answer(ANSWER_TIMEOUT_S, STARTED)
        return None if started == STARTED else self._notes(self._dead_note(awaited=True))

    def edge(self, label: str, t_s: float) -> None:
        """Ask for every GPU's energy now (window ``label`` at ``t_s``); returns at once."""
        self._send(f"edge {label} {t_s!r}")

    def stop(self, t_s: float, pids: Iterable[int] = ()) -> GpuCell:
        """Close the cell: the sampler's closing sample and reads, then everything it wrote; ``pids``: this
        process tree's, against which the sampler names the GPUs' other compute processes."""
        status, sent = None, self._send(f"stop {t_s!r} {','.join(map(str, pids)) or '-'}")
        if sent:
            status = self._replies.answer(ANSWER_TIMEOUT_S, "gpus")
        rows = _read_rows(self._path)
        note = self._notes(self._dead_note(rows, sent) if status is None else self._lag_note(t_s, status))
        if status is not None:
            self._status = status["gpus"]
        cpu_s = None
        if status is not None or rows.size:
            cpu_end = status["cpu_s"] if status is not None else float(rows[-1, _K["cpu_s"]])
            first = rows[0, _K["cpu_s"]] if rows.size else cpu_end
            cpu_s = max(0.0, cpu_end - float(first))
        return GpuCell(self._traces(rows), _energy_reads(rows, self.gpus), cpu_s,
                       int(status["missed_ticks"]) if status else 0, note,
                       tuple(status.get("others") or ()) if status else (),
                       self._host_series(rows, (status or {}).get("host") or {}) if self.samples_host else None)

    def _host_series(self, rows: np.ndarray, status: dict[str, Any]) -> SampleSeries:
        """The host rows as a series (those written before a sampler died are kept)."""
        mine = rows[rows[:, _K["kind"]] == KIND_HOST] if rows.size else np.empty((0, ROW_WIDTH))
        return _series(mine, status, HOST_COLUMNS)

    def _traces(self, rows: np.ndarray) -> tuple[GpuTrace, ...]:
        samples = rows[rows[:, _K["kind"]] == KIND_GPU] if rows.size else rows
        out = []
        for slot, gpu in enumerate(self.gpus):
            status = self._status[slot] if slot < len(self._status) else {}
            mine = samples[samples[:, _K["slot"]] == slot] if samples.size else np.empty((0, ROW_WIDTH))
            out.append(GpuTrace(index=gpu["index"], name=gpu["name"], uuid=gpu["uuid"],
                                default_sm_clock_mhz=gpu["default_sm_clock_mhz"],
                                power_source=status.get("power_source", "instant"),
                                series=_series(mine, status, GPU_COLUMNS),
                                field_latency_us=status.get("field_latency_us", {})))
        return tuple(out)

    def _lag_note(self, t_s: float, status: dict[str, Any]) -> str | None:
        """Named when the sampler missed more than ``LAG_SHARE`` of the cell's ticks (a loaded machine)."""
        ticks = max(1.0, (t_s - self._t0_s) * self.hz)
        missed = int(status["missed_ticks"])
        if missed <= LAG_SHARE * ticks:
            return None
        return (f"{self._part}: sampler lagged: {missed} of {ticks:.0f} ticks missed "
                f"(its samples ran past the next tick)")

    def _dead_note(self, rows: np.ndarray | None = None, awaited: bool = False) -> str:
        """The sampler gave no answer: it exited (its exit code), or (``awaited``: its answer was waited for, and its
        pipe is still open) it lives and did not answer in time, or garbled its answer."""
        last = ""
        if rows is not None and rows.size:
            last = f"; its last sample at {float(rows[-1, _K['t_s']]) - self._t0_s:.1f} s, kept"
        code = self._proc.poll() if self._proc is not None else None
        when = time.perf_counter() - self._t0_s
        if awaited and code is None and self._proc is not None and not self._replies.ended:
            return f"{self._part}: sampler gave no answer at {when:.1f} s into the cell (it still runs){last}"
        how = f"exit code {code}" if code is not None else "no answer"
        return f"{self._part}: sampler exited at {when:.1f} s into the cell or before ({how}){last}"

    def _notes(self, note: str | None) -> str | None:
        """``note`` and, where the sampler wrote lines that were no answer, what they were (None: nothing to say)."""
        stray = self._replies.stray_note() if self._replies is not None else ""
        return "; ".join(n for n in (note, f"{self._part}: {stray}" if stray else "") if n) or None

    @property
    def _part(self) -> str:
        """What the sampler's notes speak of: "GPU telemetry" where it samples a GPU, else "host telemetry"."""
        return "GPU telemetry" if self.gpus or not self.samples_host else "host telemetry"

    def _send(self, line: str) -> bool:
        if not self.alive:
            return False
        try:
            self._proc.stdin.write((line + "\n").encode())
            self._proc.stdin.flush()
            return True
        except OSError:  # BrokenPipeError: it died between the poll and the write
            return False

    def _why(self) -> str:
        self._stderr.seek(0)
        tail = self._stderr.read()[-400:].strip().replace("\n", " | ")
        return f"exit code {self._proc.poll()}: {tail}" if tail else f"exit code {self._proc.poll()}"

    def close(self) -> None:
        if self._proc is not None:
            self._send("quit")
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._stderr is not None:
            self._stderr.close()
        if os.path.isdir(self._dir):
            for name in os.listdir(self._dir):
                os.unlink(os.path.join(self._dir, name))
            os.rmdir(self._dir)


def _read_rows(path: str) -> np.ndarray:
    """The rows the sampler appended (a row cut short by its death is dropped)."""
    try:
        data = np.fromfile(path, dtype=np.float64)
        os.unlink(path)
    except (OSError, ValueError):
        return np.empty((0, ROW_WIDTH))
    n = data.size // ROW_WIDTH
    return data[: n * ROW_WIDTH].reshape(n, ROW_WIDTH)


def _series(rows: np.ndarray, status: dict[str, Any], columns) -> SampleSeries:
    values, ok = {}, {}
    for j, (name, dtype) in enumerate(columns):
        col = rows[:, len(ROW_FIELDS) + j]
        ok[name] = ~np.isnan(col)
        values[name] = np.where(ok[name], col, 0).astype(dtype) if dtype.startswith("u") else col.copy()
    return SampleSeries(rows[:, _K["t_s"]].copy(), values, ok, dict(status.get("unsupported", {})),
                        dict(status.get("read_errors", {})))


def _energy_reads(rows: np.ndarray, gpus: list[dict[str, Any]]) -> tuple[EnergyRead, ...]:
    if not rows.size:
        return ()
    energy = len(ROW_FIELDS) + [c for c, _ in GPU_COLUMNS].index("energy_mj")
    out = []
    for r in rows[rows[:, _K["kind"]] == KIND_EDGE]:
        code = int(r[_K["label"]])
        out.append(EnergyRead(gpu=gpus[int(r[_K["slot"]])]["index"], label=EDGE_LABELS[code] if code >= 0 else "?",
                              t_mark_s=float(r[_K["t_mark_s"]]), t_s=float(r[_K["t_s"]]),
                              t_end_s=float(r[_K["t_end_s"]]), energy_mj=int(r[energy])))
    return tuple(out)
