"""Other processes on the GPU: NVML's running compute processes that are not this process tree's.

Read once as each entry's sampling ends (``Telemetry.stop_cell``), for the disturbance rule
(``inproc.telemetry.disturbed``): a process of another program computing on a GPU this run measures
takes its SMs and memory bandwidth. NVML names processes by the host's PIDs; inside a container those
are not this process's, so the list is trusted only when NVML also lists one of this tree's own PIDs
(else nothing is named: not judged, rather than every process called foreign).
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Sequence


def own_pids() -> set[int]:
    """This process and its children (engine workers), recursively; this process alone without psutil."""
    pids = {os.getpid()}
    try:
        import psutil

        pids |= {p.pid for p in psutil.Process().children(recursive=True)}
    except Exception:  # psutil missing, or a child gone between listing and reading: the pids known so far
        pass
    return pids


def other_compute_processes(nvml: Any, handles: Sequence[tuple[int, Any]], mine: Iterable[int]) -> tuple[str, ...]:
    """``GPU 0: pid 4242 (1,024 MiB)`` for each compute process on these (index, handle) GPUs not in ``mine``;
    () when NVML answers nothing or lists none of ``mine`` (another PID namespace)."""
    mine = set(mine)
    seen: list[tuple[int, Any]] = []
    for index, handle in handles:
        try:
            seen += [(index, p) for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)]
        except Exception:  # not supported, or the driver did not answer: this GPU is not judged
            continue
    if not any(p.pid in mine for _, p in seen):
        return ()
    return tuple(f"GPU {index}: pid {p.pid} ({_mib(p)})" for index, p in seen if p.pid not in mine)


def _mib(p: Any) -> str:
    used = getattr(p, "usedGpuMemory", None)
    return "memory not reported" if used is None else f"{used / 2**20:,.0f} MiB"
