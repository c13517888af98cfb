"""A cell's kernel pass, compact: device time per profiled step by category, the top names, the steps' own time.

What the report, ``compare``, ``history`` and ``bisect`` read of a :class:`~inproc.kernels.table.KernelTable`:

- ``per_step_ns``: for each profiled step (in row order), the Σ ``device_ns`` of its kernels
  in each category (columns in :data:`~inproc.kernels.categories.CATEGORIES` order): the
  per-step values compare's tests draw on;
- ``names``: the kernel names with the most device time per step (their category and mean
  ns per step), and the top unmatched (``other``) names, so the rule table can grow;
- ``step_s``: the mean ``Engine.step()`` time (start to end) of the steps the pass covered,
  read from the cell's step trace at the rows the table names: the step's own time, which
  the categories' sum is shown beside (on a CPU, the operators' self time; on CUDA, device
  time, which overlaps the host's time in the step).

A baseline or a night's history entry keeps this instead of the table (``inproc.record.compact``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from inproc.codec import decode_array, encode_array
from inproc.kernels.categories import CATEGORIES, OTHER
from inproc.kernels.table import KernelTable

#: Names kept per cell, by device time per step; and unmatched names kept besides them.
TOP_NAMES, TOP_OTHER = 32, 10
#: Below this share of the step's own time covered by kernels, the steps are host-bound (the report says so).
HOST_BOUND_COVERAGE = 0.5


@dataclass(frozen=True, eq=False)
class KernelSummary:
    """One cell's kernel pass: per-step category sums, the top names, the steps' own mean time."""

    device: str  # "cuda" (device kernels) or "cpu" (operators' self time)
    per_step_ns: np.ndarray  # float64, (steps, len(CATEGORIES)): Σ device_ns per step and category
    names: tuple[str, ...]  # the top names and the top unmatched names, by device time per step
    name_categories: tuple[str, ...]
    name_ns: np.ndarray  # float64: each name's mean device ns per profiled step
    step_s: float | None = None  # mean Engine.step() time of the profiled steps (None: no step trace)

    @property
    def steps(self) -> int:
        return int(self.per_step_ns.shape[0])

    def ns_by_category(self) -> dict[str, float]:
        """Mean device ns per profiled step, per category (every category)."""
        means = self.per_step_ns.mean(axis=0) if self.steps else np.zeros(len(CATEGORIES))
        return {c: float(v) for c, v in zip(CATEGORIES, means)}

    def total_ns(self) -> float:
        """Σ over categories of the mean device ns per step."""
        return float(self.per_step_ns.sum(axis=1).mean()) if self.steps else 0.0

    def coverage(self) -> float | None:
        """Σ categories ÷ the steps' own time (None: no step time); below HOST_BOUND_COVERAGE: host-bound steps."""
        return self.total_ns() / (self.step_s * 1e9) if self.step_s else None

    def top_names(self, category: str | None = None, limit: int = 5) -> list[tuple[str, str, float]]:
        """The names with the most device time per step, (name, category, ns), in ``category`` when given."""
        keep = np.array([category is None or c == category for c in self.name_categories], dtype=bool)
        order = np.argsort(-self.name_ns, kind="stable")
        chosen = order[keep[order]][:limit]
        return list(zip([self.names[i] for i in chosen], [self.name_categories[i] for i in chosen],
                        self.name_ns[chosen].tolist()))

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "categories": list(CATEGORIES), "steps": self.steps,
                "per_step_ns": encode_array(self.per_step_ns.ravel()), "names": list(self.names),
                "name_categories": list(self.name_categories), "name_ns": encode_array(self.name_ns),
                "step_s": self.step_s}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "KernelSummary":
        stored = list(d["categories"])
        flat = decode_array(d["per_step_ns"]).reshape(int(d["steps"]), len(stored))
        # Columns by name: a category a later version adds reads as 0 here, one it drops is left out.
        per_step = np.column_stack([flat[:, stored.index(c)] if c in stored else np.zeros(flat.shape[0])
                                    for c in CATEGORIES]) if flat.size else np.zeros((flat.shape[0], len(CATEGORIES)))
        return cls(str(d["device"]), per_step, tuple(d["names"]), tuple(d["name_categories"]),
                   decode_array(d["name_ns"]).astype(np.float64), d.get("step_s"))


def summarize(table: KernelTable, step_durations_s: np.ndarray | None = None,
              rows: np.ndarray | None = None) -> KernelSummary:
    """The table, compact. ``step_durations_s``: every step's ``t_end_s − t_start_s`` (the cell's step trace);
    ``rows``: the pass's steps (its span in the step trace: a step no kernel ran in counts 0; None: the table's)."""
    steps = np.union1d(rows, table.steps).astype(np.int64) if rows is not None else table.steps
    at = np.searchsorted(steps, table.step)
    per_step = np.zeros((steps.size, len(CATEGORIES)))
    cat_index = np.array([CATEGORIES.index(c) if c in CATEGORIES else CATEGORIES.index(OTHER) for c in table.category],
                         dtype=np.int64)
    np.add.at(per_step, (at, cat_index), np.asarray(table.device_ns, dtype=np.float64))
    by_name: dict[str, float] = {}  # mean ns per step of the pass (the table's own mean leaves out empty steps)
    for name, ns in zip(table.name, table.device_ns):
        by_name[name] = by_name.get(name, 0.0) + float(ns) / max(1, steps.size)
    category_of = dict(zip(table.name, table.category))
    ranked = sorted(by_name, key=lambda n: -by_name[n])
    kept = ranked[:TOP_NAMES] + [n for n in ranked[TOP_NAMES:] if category_of[n] == OTHER][:TOP_OTHER]
    step_s = None
    if step_durations_s is not None and steps.size and int(steps.max()) < step_durations_s.size:
        step_s = float(np.mean(step_durations_s[steps]))
    return KernelSummary(table.device, per_step, tuple(kept), tuple(category_of[n] for n in kept),
                         np.array([by_name[n] for n in kept], dtype=np.float64), step_s)
