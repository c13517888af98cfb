"""Run metadata collectors: each fills one dict and tolerates missing sources."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from inproc import engines
from inproc.telemetry import metadata
from inproc.telemetry.metadata import collect_metadata
from tests.fakes.fake_nvml import FakeGpu, FakeNvml, FakeNvmlError


def test_gpu_metadata_from_the_fake_binding_records_what_it_can():
    nvml = FakeNvml([FakeGpu(), FakeGpu(uuid="GPU-fake-0001")])
    meta = collect_metadata(nvml=nvml)
    gpu = meta["gpu"]
    assert gpu["driver_version"] == "999.99.99-fake"
    assert gpu["cuda_driver_version"] == "12.4"
    assert gpu["count"] == 2
    dev = gpu["devices"][1]
    assert dev["name"] == "Fake H200 (not a GPU)" and dev["uuid"] == "GPU-fake-0001"
    assert dev["power_limit_w"] == 700.0
    assert dev["default_sm_clock_mhz"] == 1980
    assert dev["ecc_mode"] == {"current": True, "pending": True}
    assert dev["persistence_mode"] is True
    # The fake lacks these calls: each is an error entry, the rest is still there.
    assert "AttributeError" in dev["errors"]["compute_capability"]
    assert "nvml_version" in gpu["errors"]
    assert gpu["topology"] == {"0-1": "unknown (AttributeError)"}
    assert nvml.init_calls == nvml.shutdown_calls == 1
    json.dumps(meta)  # all of it goes into the results file


def test_without_nvml_the_gpu_collector_says_why():
    meta = collect_metadata(nvml=FakeNvml(init_error=FakeNvmlError(9)))
    assert meta["gpu"] == {"absent": "NVML unavailable: FakeNvmlError: fake NVML error 9"}


def test_host_and_software_collectors_read_this_machine():
    meta = collect_metadata(nvml=FakeNvml(init_error=FakeNvmlError(9)))
    assert meta["cpu"]["logical_cores"] == os.cpu_count()
    assert meta["cpu"]["affinity_cores"] >= 1
    assert isinstance(meta["cpu"]["model"], str) and meta["cpu"]["model"]
    assert meta["system"]["python"] == sys.version.split()[0]
    assert meta["software"]["numpy"] == np.__version__


def test_engine_versions_are_the_installed_ones():
    """Each registered engine's version as its own package reports it; None where it is not installed."""
    meta = collect_metadata(nvml=FakeNvml(init_error=FakeNvmlError(9)), software=engines.software())
    for name in engines.names():
        adapter = engines.get(name)
        expected = adapter.version() if adapter.installed() else None
        assert meta["software"][adapter.distributions[0]] == expected
    assert any(meta["software"][engines.get(n).distributions[0]] for n in engines.names())  # one engine is here


def test_a_collector_that_fails_outright_becomes_an_error_dict(monkeypatch):
    def broken(*args):
        raise OSError("no /proc here")

    monkeypatch.setattr(metadata, "collect_cpu", broken)
    meta = collect_metadata(nvml=FakeNvml(init_error=FakeNvmlError(9)))
    assert meta["cpu"] == {"error": "OSError: no /proc here"}
    assert "python" in meta["system"]


def test_collecting_metadata_imports_no_heavy_module():
    before = set(sys.modules)
    collect_metadata(nvml=FakeNvml(init_error=FakeNvmlError(9)))
    assert not {"torch", "vllm", "sglang"} & (set(sys.modules) - before)
