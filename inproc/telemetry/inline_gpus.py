"""GPUs read inside the engine's process from a binding object: the tests' replayed fakes, with a fake clock.

The runner never uses this: it spawns the sampler process (``inproc.telemetry.gpu_sampler``).
Here the GPU probes run on the caller's thread (``Telemetry.sample_now``) or the host thread,
and the edge reads at each mark, so a replay can be stepped sample by sample.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from inproc.telemetry.gpu_procs import other_compute_processes
from inproc.telemetry.gpu_reader import GpuReader, load_nvml, select_handles, shutdown
from inproc.telemetry.gpu_sampler import GpuCell
from inproc.telemetry.trace import EnergyRead


class InlineGpus:
    """The GPUs of a binding object, read in this process; the same calls as ``GpuProcess``."""

    def __init__(self, nvml: Any, readers: list[GpuReader], clock: Callable[[], float]) -> None:
        self.nvml, self.readers, self._clock = nvml, readers, clock
        self._reads: list[EnergyRead] = []
        self.absent_reason = None if readers else "no GPU selected"
        self.placement = "read inside the engine's process (a binding object was given)"

    def start(self, t_s: float) -> str | None:
        self._reads = []
        for reader in self.readers:
            reader.new_cell()
        self.edge("start", t_s)
        return None

    def sample(self, closing: bool = False) -> None:
        for reader in self.readers:
            reader.take(self._clock(), closing)

    def edge(self, label: str, t_s: float) -> None:
        for reader in self.readers:
            try:
                value = reader.read_energy()[2]
            except Exception:
                continue
            now = self._clock()
            self._reads.append(EnergyRead(reader.index, label, t_s, now, now, value))

    def stop(self, t_s: float, pids: Iterable[int] = ()) -> GpuCell:
        """The stop reads (the closing sample was taken with the host's, ``Telemetry.sample_now``), and the GPUs'
        compute processes not among ``pids``."""
        self.edge("stop", t_s)
        others = other_compute_processes(self.nvml, [(r.index, r.handle) for r in self.readers], pids) if pids else ()
        return GpuCell(tuple(r.trace() for r in self.readers), tuple(self._reads), None, 0, None, others)

    def close(self) -> None:
        shutdown(self.nvml)


def open_inline(nvml: Any, gpu_indices: Sequence[int] | None, capacity: int,
                clock: Callable[[], float]) -> tuple[InlineGpus | None, str | None]:
    """The GPUs of ``nvml`` (a pynvml-shaped object) to read in this process, or ``(None, reason)``."""
    binding, absent = load_nvml(nvml)
    if binding is None:
        return None, absent
    handles, absent = select_handles(binding, gpu_indices)
    if not handles:
        shutdown(binding)
        return None, absent
    return InlineGpus(binding, [GpuReader(binding, i, h, capacity) for i, h in handles], clock), None
