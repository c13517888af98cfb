"""Simulated kernel passes whose truth is known: each category's device time per step, drawn per run.

A run's pass holds ``steps`` profiled steps. A category's time in one step is its mean
(:data:`MEANS_MS`, a decode step of a dense model on a GPU) times the run's own factor
(log-normal, ``run_sd``: how much a whole run differs, e.g. another prompt set or clock)
times the step's jitter (log-normal, ``step_sd``, AR(1) with ``rho`` between neighbouring
steps, as a step's timing leans on the one before). A planted shift adds ``plant_ms`` to
one category in every step of the planted runs, spread over its kernels as the clean
time is. The steps' own time is the categories' sum plus host time.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from inproc.kernels.categories import CATEGORIES
from inproc.kernels.summary import KernelSummary
from inproc.kernels.table import KernelTable
from inproc.measure.trace import KernelPass

#: Mean device ms per step by category, and each category's kernels with their shares of it.
MEANS_MS = {"attention": 2.0, "gemm": 5.0, "communication": 0.6, "sampling": 0.2, "elementwise": 1.0,
            "memory": 0.3, "other": 0.2}
KERNELS = {"attention": (("flash_fwd_splitkv_kernel", 0.8), ("reshape_and_cache_flash_kernel", 0.2)),
           "gemm": (("nvjet_tst_128x256_64x4_1x2_h_bz_coopB_TNT", 0.7), ("sm90_xmma_gemm_bf16bf16_bf16f32", 0.3)),
           "communication": (("cross_device_reduce_1stage", 1.0),), "sampling": (("topk_topp_sampler", 1.0),),
           "elementwise": (("rms_norm_kernel", 0.5), ("act_and_mul_kernel", 0.5)),
           "memory": (("Memcpy DtoD (Device -> Device)", 1.0),), "other": (("some_unmatched_kernel", 1.0),)}
HOST_MS = 0.8


@dataclass(frozen=True)
class PassSettings:
    steps: int = 16
    run_sd: float = 0.01  # log sd of a whole run's factor, per category
    step_sd: float = 0.05  # log sd of one step's jitter
    rho: float = 0.3  # correlation of neighbouring steps' jitter
    plant: str = ""  # the category shifted ("" none)
    plant_ms: float = 0.0


def _jitter(rng: np.random.Generator, s: PassSettings, width: int) -> np.ndarray:
    z = rng.normal(0.0, 1.0, (s.steps, width))
    out = np.empty_like(z)
    out[0] = z[0]
    for i in range(1, s.steps):
        out[i] = s.rho * out[i - 1] + np.sqrt(1 - s.rho ** 2) * z[i]
    return np.exp(s.step_sd * out)


def simulate_pass(s: PassSettings, rng: np.random.Generator) -> KernelSummary:
    """One run's kernel pass, compact."""
    means = np.array([MEANS_MS.get(c, 0.0) for c in CATEGORIES])
    run = np.exp(rng.normal(0.0, s.run_sd, means.size))
    per_step_ms = means * run * _jitter(rng, s, means.size)
    if s.plant:
        per_step_ms[:, CATEGORIES.index(s.plant)] += s.plant_ms
    names, cats, ns = [], [], []
    for k, c in enumerate(CATEGORIES):
        for name, share in KERNELS.get(c, ()):
            names.append(name)
            cats.append(c)
            ns.append(per_step_ms[:, k].mean() * share * 1e6)
    step_s = float(per_step_ms.sum(axis=1).mean() + HOST_MS) / 1e3
    return KernelSummary("cuda", per_step_ms * 1e6, tuple(names), tuple(cats), np.array(ns), step_s)


def simulate_runs(s: PassSettings, runs: int, rng: np.random.Generator) -> list[KernelSummary]:
    return [simulate_pass(s, rng) for _ in range(runs)]


def table_of(summary: KernelSummary, first_row: int) -> KernelTable:
    """A kernel table whose steps are rows ``first_row``… of a step trace, each kernel's time in each step as the
    summary's category time in that step times the kernel's share (the sim's :data:`KERNELS`)."""
    step, name, cat, calls, ns = [], [], [], [], []
    for i in range(summary.steps):
        for k, c in enumerate(CATEGORIES):
            for kernel, share in KERNELS.get(c, ()):
                step.append(first_row + i)
                name.append(kernel)
                cat.append(c)
                calls.append(1)
                ns.append(int(round(summary.per_step_ns[i, k] * share)))
    return KernelTable(np.array(step, dtype=np.int64), tuple(name), tuple(cat), np.array(calls, dtype=np.int64),
                       np.array(ns, dtype=np.int64), summary.device)


def attach(entry, table: KernelTable | None, note: str = ""):
    """The decode entry with ``table`` as its trace's kernel pass (``CellTrace.kernels``, its span the table's steps);
    ``note``: a pass that could not run (no table)."""
    rows = table.steps if table is not None else np.array([entry.trace.steps.t_end_s.size])
    span = KernelPass(int(rows[0]), int(rows[-1]) if table is not None else int(rows[0]) - 1,
                      table.device if table is not None else "", note)
    return replace(entry, trace=replace(entry.trace, kernels=table, kernel_pass=span))
