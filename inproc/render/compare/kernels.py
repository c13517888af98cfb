"""The kernel section of a comparison (``Comparison.kernels``, ``inproc.compare.kernels``): its view and its JSON.

One line per cell whose runs all have a kernel pass: the categories named, with their
change per step and interval, and the kernels within them; or that none moved beyond its
noise. Every category's figures are in the JSON, which no other format shows.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from inproc.compare.kernels import MATERIAL, KernelChange, describe
from inproc.compare.spread import NIGHT_ALPHA
from inproc.compare.verdicts import Comparison
from inproc.units import cell_key, format_tokens

TITLE = "Kernels: where the step's device time moved"
RULE = (f"Each kernel category's device time per profiled step, new − baseline, where every run of a cell has a "
        f"kernel pass. A category is named when its change is an alarm under one alarm rate of "
        f"{NIGHT_ALPHA * 100:g}% over every category of every cell, and at least {MATERIAL * 100:g}% of the "
        f"baseline's step time. One run each side names a category only against a stated --run-spread.")


@dataclass(frozen=True)
class KernelsSection:
    """The section's title, its rule and a line per cell."""

    title: str
    rule: str
    lines: tuple[str, ...]


def _cell(k: KernelChange) -> str:
    return f"{format_tokens(k.context)} x {k.concurrency}"


def section(c: Comparison) -> KernelsSection | None:
    """One line per cell with a kernel pass on both sides ("256 x 4: the change sits in gemm: …"); None without one."""
    if not c.kernels:
        return None
    return KernelsSection(TITLE, RULE, tuple(f"{_cell(k)}: {describe(k)}" for k in c.kernels))


def to_json(c: Comparison) -> list[dict]:
    """Per cell: the test, the units, the step's change, every category (named or not), the kernels within named ones."""
    return [{"cell": cell_key(k.context, k.concurrency), "context": k.context, "concurrency": k.concurrency,
             "test": k.test, "n_base": k.n_base, "n_new": k.n_new, "indicative": k.indicative,
             "judged": k.judged, "run_spread": k.run_spread,
             "base_step_ms": k.base_step_ms, "step_delta_ms": k.step_delta_ms, "material_ms": k.material_ms,
             "named": [x.category for x in k.named], "diagnosis": describe(k),
             "categories": [asdict(x) for x in k.categories],
             "kernels": {cat: [asdict(s) for s in shifts] for cat, shifts in k.kernels}}
            for k in c.kernels]
