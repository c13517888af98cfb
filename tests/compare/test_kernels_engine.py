"""Known truth on the real engine: compare of a clean run against a planted-GEMM run names gemm; clean against clean
names nothing.

The plant is a vLLM general plugin (``tests/plugins.py``) whose wrap of ``execute_model`` runs
extra ``torch.mm`` before every step (after the first eight), timing them itself into a log:
inside the engine's step, so the kernel pass sees them as ``aten::mm``. One run each side, so
the runs' spread is stated (``--run-spread 50%``: this machine is shared, and a whole run's
operators slow together when another job takes a core: clean runs measured 4.6 ms of gemm per
step in a quiet slot, 52.8 and 64.0 ms in a loaded one). The planted multiplies, sized to about
60 ms a step (they logged 33.6 ms), are several times the model's own GEMMs: gemm 4.68 → 41.76 ms
[+28.8, +45.4]; clean against clean, gemm +0.03 ms [−7.3, +7.4], nothing named. A plant sized
from the first steps' gaps was unstable: 15.7 ms a step was named (+15.7 ms [+8.4, +23.0]), 5.0
ms was not at this spread (+5.5 ms [−1.7, +12.6]).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import DEFAULT_PROFILES, needs
from tests.plugins import plugin_env, register, wrapping_module
from tests.spawn import child_env, run_inproc

pytestmark = [pytest.mark.engine, needs("vllm")]
CELL = ["--no-prefill", "--cells", "256x4", "--window-steps", "16", "--kernels", "--kernel-steps", "16"]
# Sized by its own clock: about PLANT_MS of matmuls before every step from the ninth on (each call's time logged).
# A size read from the first steps' gaps was unstable (those calls include the engine's warm-up: 5 to 16 ms).
PLANT_MS = 60
PLANT = """
import os, torch
global _kv
if n == 1:
    _kv = {"a": torch.ones(192, 192)}
if n <= 8:
    return
if "reps" not in _kv:
    t0 = time.perf_counter_ns()
    for _ in range(5):
        torch.mm(_kv["a"], _kv["a"])
    _kv["reps"] = max(2, round(PLANT_MS * 1e6 / ((time.perf_counter_ns() - t0) / 5)))
t0 = time.perf_counter_ns()
for _ in range(_kv["reps"]):
    torch.mm(_kv["a"], _kv["a"])
with open(os.environ["INPROC_TEST_PLANT_LOG"], "a") as f:
    f.write(f"{time.perf_counter_ns() - t0}\\n")
""".replace("PLANT_MS", str(PLANT_MS))


def _run(out: Path, env) -> Path:
    p = run_inproc("run", str(DEFAULT_PROFILES["vllm"]), *CELL, "--out", str(out), "--force", env=env, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return out


def _kernels(base: Path, new: Path) -> dict:
    p = run_inproc("compare", str(base), str(new), "--run-spread", "50%", "--format", "json", env=child_env())
    assert p.returncode in (0, 1), p.stderr[-2000:]
    found = json.loads(p.stdout)["kernels"]
    assert len(found) == 1, p.stdout[-3000:]
    return found[0]


def test_compare_names_gemm_for_a_planted_gemm_and_nothing_for_clean_runs(tmp_path):
    log, src, site = tmp_path / "plant.txt", tmp_path / "src", tmp_path / "site"
    src.mkdir()
    (src / "kvgemmplant.py").write_text(wrapping_module(PLANT))
    register(site, "kvgemmplant")
    clean = child_env(VLLM_LOGGING_LEVEL="ERROR")
    a, b = _run(tmp_path / "clean-a.json", clean), _run(tmp_path / "clean-b.json", clean)
    planted = _run(tmp_path / "planted.json",
                   plugin_env(site, src, INPROC_TEST_PLANT_LOG=str(log), VLLM_LOGGING_LEVEL="ERROR"))
    plant_ms = float(np.median([int(x) for x in log.read_text().split()])) / 1e6
    quiet, moved = _kernels(a, b), _kernels(a, planted)
    gemm = next(c for c in moved["categories"] if c["category"] == "gemm")
    print(f"plant {plant_ms:.2f} ms per step; gemm {gemm['base_ms']:.2f} → {gemm['new_ms']:.2f} ms "
          f"[{gemm['low_ms']:+.2f}, {gemm['high_ms']:+.2f}]; clean vs clean: {quiet['diagnosis']}")
    assert quiet["named"] == [], quiet["diagnosis"]
    assert moved["named"][:1] == ["gemm"] and "aten::mm" in moved["kernels"]["gemm"][0]["name"], moved["diagnosis"]
    # The rise is about what the plugin timed itself (its own multiplies, measured around them).
    assert 0.5 * plant_ms <= gemm["delta_ms"] <= 1.5 * plant_ms, (gemm, plant_ms)
