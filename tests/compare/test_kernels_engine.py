"""Known truth on the real engine: compare of a clean run against a planted-GEMM run names gemm; clean against clean
names nothing.

The plant is a vLLM general plugin (``tests/plugins.py``, ``step_sized_gemm``) whose wrap of
``execute_model`` runs extra ``torch.mm`` before every step once eight clean steps were timed,
timing them itself into a log: inside the engine's step, so the kernel pass sees them as
``aten::mm``. One run each side, so the runs' spread is stated (``--run-spread 50%``: on a
shared machine a whole run's operators slow together when another job takes a core: clean runs
measured 4.6 ms of gemm per step in a quiet slot, 52.8 and 64.0 ms in a loaded one). A plant of
a fixed time (60 ms by its own clock when sized) was named on 2 cores but not on one CPU shared
with two burners, where the model's own GEMMs took 30.7 ms a step and the plant logged 17.2 ms
(gemm +30.8 ms [−17.7, +79.3]). Sized by the machine's own steps it grows with them: five steps
(14 ms) were not named on 2 cores (+13.8 ms [+3.5, +24.2]); fifteen (65 ms) were, gemm 5.08 →
68.97 ms [+55.3, +72.5], clean against clean +1.55 ms [−6.5, +9.6].
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import DEFAULT_PROFILES, needs
from tests.plugins import plugin_env, read_plant_log, register, step_sized_gemm, wrapping_module
from tests.spawn import child_env, run_inproc

pytestmark = [pytest.mark.engine, pytest.mark.long, needs("vllm")]  # three runs and two compares
CELL = ["--no-prefill", "--cells", "256x4", "--window-steps", "16", "--kernels", "--kernel-steps", "16"]
#: Before every step once eight clean steps were timed, multiplies sized to about PLANT_STEPS of the machine's own
#: steps (tests/plugins.py): named against a stated 50 % run spread on a quiet machine or one three times slower.
PLANT_STEPS = 15
PLANT = step_sized_gemm(PLANT_STEPS)


def _run(out: Path, env) -> Path:
    p = run_inproc("run", str(DEFAULT_PROFILES["vllm"]), *CELL, "--out", str(out), "--force", env=env, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return out


def _kernels(base: Path, new: Path) -> dict:
    p = run_inproc("compare", str(base), str(new), "--run-spread", "50%", "--format", "json", env=child_env())
    assert p.returncode in (0, 1, 3), p.stderr[-2000:]  # 3: rows a 16-step window leaves without enough samples
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
    plant_ms = float(np.median(read_plant_log(log)[1])) / 1e6
    quiet, moved = _kernels(a, b), _kernels(a, planted)
    gemm = next(c for c in moved["categories"] if c["category"] == "gemm")
    print(f"plant {plant_ms:.2f} ms per step; gemm {gemm['base_ms']:.2f} → {gemm['new_ms']:.2f} ms "
          f"[{gemm['low_ms']:+.2f}, {gemm['high_ms']:+.2f}]; clean vs clean: {quiet['diagnosis']}")
    assert quiet["named"] == [], quiet["diagnosis"]
    assert moved["named"][:1] == ["gemm"] and "aten::mm" in moved["kernels"]["gemm"][0]["name"], moved["diagnosis"]
    # The rise is about what the plugin timed itself (its own multiplies, measured around them).
    assert 0.5 * plant_ms <= gemm["delta_ms"] <= 1.5 * plant_ms, (gemm, plant_ms)
