"""A real vLLM cell with GPU telemetry from the FAKE H200-cost NVML (tests/fakes/h200_nvml.py) in the sampler process.

Only NVML is a stand-in: the engine, the runner, the sampler process, the results file and the
report are inproc's own. What a GPU run records comes out: energy per window from the counter
read at the window's edges, J/token, the Throttled check, the report's telemetry plots and the
telemetry cost figures.
"""
from __future__ import annotations

import pytest

from inproc.record.io import load_results
from inproc.render.charts import telemetry_panels
from tests.conftest import DEFAULT_PROFILE, needs_vllm
from tests.fakes import h200_nvml
from tests.spawn import run_inproc as inproc

pytestmark = [pytest.mark.engine, pytest.mark.long]  # an inproc cell with prefill, then a report: two children

GPUS = 2


@needs_vllm
def test_a_cell_with_gpu_telemetry_from_the_sampler_process(tmp_path):
    out = tmp_path / "r.json"
    env = {"INPROC_NVML_BINDING": "tests.fakes.h200_nvml", "INPROC_FAKE_NVML_GPUS": str(GPUS)}
    p = inproc("cell", str(DEFAULT_PROFILE), "--context", "256", "--concurrency", "2", "--prefill", "--duration", "2",
               "--max-output", "64", "--seed", "3", "--out", str(out), env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    rec = load_results(str(out))
    (pre,), (cell,) = rec.prefill, rec.decode
    power_w = sum(h200_nvml.power_w(i) for i in range(GPUS))
    step_j = power_w * h200_nvml.COUNTER_PERIOD_S  # one counter update of every GPU
    # Decode: energy from the reads the sampler made when the decode loop marked the window's edges.
    tel = cell.telemetry
    trace, fig = tel.trace, tel.figures
    labels = sorted({(r.gpu, r.label) for r in trace.energy_reads})
    assert labels == sorted((g, lab) for g in range(GPUS) for lab in ("close", "open", "start", "stop"))
    opened = next(r for r in trace.energy_reads if r.label == "open")
    closed = next(r for r in trace.energy_reads if r.label == "close")
    window_s = cell.figures.window_s
    origin = cell.trace.clock_origin_s
    assert opened.t_mark_s == pytest.approx(origin + cell.trace.window_open_s, abs=1e-6)  # marked at the window's open
    assert closed.t_mark_s >= opened.t_mark_s + window_s - 1e-6  # at the end of the step that closed it
    assert all(g.energy_source == "edges" for g in fig.gpus)
    marked_j = power_w * (closed.t_mark_s - opened.t_mark_s)
    assert abs(fig.energy_j - marked_j) <= step_j + power_w * 0.05
    assert fig.joules_per_token == pytest.approx(fig.energy_j / cell.figures.output_tokens)
    # The Throttled check from the sampler's series: power-capped is recorded, never a failure.
    assert tel.throttle_passed is True and "sw_power_cap in 100.0% of samples" in tel.throttle_reason
    assert fig.mean_power_w == pytest.approx(power_w)
    # What telemetry cost, as data: in this process over the window, and the sampler's own.
    assert fig.inproc_gpu_cpu_s is not None and 0 < fig.inproc_gpu_cpu_s < 0.002
    assert fig.inproc_cpu_pct is not None and trace.sampler_cpu_s > 0
    # Prefill: the entry's sampling start and stop bracket its window.
    pfig = pre.telemetry.figures
    assert pfig.energy_j is not None and all(g.energy_source == "edges" for g in pfig.gpus)
    # The report: the cost columns, and the telemetry plots from the sampler's series.
    md = inproc("report", str(out))
    assert md.returncode == 0 and "Telemetry CPU" in md.stdout and "Sampler CPU" in md.stdout
    panels, why = telemetry_panels(rec)
    assert panels and not why and panels[0].charts
