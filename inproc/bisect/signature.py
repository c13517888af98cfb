"""The step-level signature of a change: which term of the step anatomy moved, the graph mode, the padding.

A change of Total tok/s splits into the terms of :func:`inproc.history.diagnose.step_terms`
(tokens per step, forward time, host time, time outside the step). The signature is the
term that explains the largest share of the change, the CUDA-graph mode most steps ran in
on each side, whether padding waste moved (beyond :data:`inproc.history.facts.SHARE_POINTS`),
and, where every run on both sides has a kernel pass, the kernel category the change sits in:
the largest category named by :mod:`inproc.compare.kernels`'s rule, where its change holds at
least :data:`KERNEL_SHARE` of the profiled step's change ("" where none is named, where the
change sits outside the kernels, or where a side has no pass). A category named beside a change
mostly outside it (a slower host loop that leaves every kernel a little colder) says nothing of
the change's kind. Two changes with the same signature are the same kind of change: a
candidate that is slower for another reason (host time where the regression is forward time,
another graph mode, the GEMMs where the regression is attention) is not the regression being
bisected. A kernel category is held against another only where both signatures name one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from inproc.compare.kernels import cell_change, judge
from inproc.history.diagnose import median_of, step_terms
from inproc.history.facts import SHARE_POINTS
from inproc.record.compact import CellAnatomy

#: A named kernel category is the change's own only where its change per step holds at least this share of the
#: profiled step's change per step, the same way.
KERNEL_SHARE = 0.5


@dataclass(frozen=True)
class Signature:
    """What moved in the steps between two groups of runs."""

    term: str  # the step term with the largest share of the change ("forward", "host", "tokens", "busy"; "" none)
    share: float  # that term's share of the change (1.0: all of it)
    graph_modes: tuple[str, str]  # the graph mode most steps ran in: (before, after); "" where none is recorded
    padding: str  # "up", "down" or "same"
    kernel: str = ""  # the kernel category the change sits in ("": none named, or no kernel pass on a side)

    def describe(self) -> str:
        parts = [f"{self.term} time" if self.term in ("forward", "host") else self.term or "no step term",
                 f"{self.share * 100:.0f} % of the change"]
        if self.kernel:
            parts.append(f"in {self.kernel} kernels")
        if self.graph_modes[0] != self.graph_modes[1]:
            parts.append(f"graph mode {self.graph_modes[0] or 'none'} → {self.graph_modes[1] or 'none'}")
        if self.padding != "same":
            parts.append(f"padding {self.padding}")
        return ", ".join(parts)

    def same_kind(self, other: "Signature") -> bool:
        """The same term dominates, the same graph modes, padding moved the same way, the same kernel category
        (where both name one)."""
        kernel = not self.kernel or not other.kernel or self.kernel == other.kernel
        return kernel and (self.term, self.graph_modes, self.padding) == (other.term, other.graph_modes, other.padding)


def _graph_mode(runs: Sequence[CellAnatomy]) -> str:
    shares: dict[str, list[float]] = {}
    for a in runs:
        for mode, share in a.graph_step_share.items():
            shares.setdefault(mode, []).append(share)
    medians = {mode: float(np.median(v)) for mode, v in shares.items()}
    return max(medians, key=medians.get) if medians else ""


def _padding(base: Sequence[CellAnatomy], new: Sequence[CellAnatomy]) -> str:
    b, n = median_of(base, lambda a: a.padding_waste), median_of(new, lambda a: a.padding_waste)
    if b is None or n is None or abs(n - b) < SHARE_POINTS:
        return "same"
    return "up" if n > b else "down"


def _kernel(base: Sequence[CellAnatomy], new: Sequence[CellAnatomy]) -> str:
    """The named kernel category with the largest change, where it holds :data:`KERNEL_SHARE` of the step's change
    ("" where none does, the step time is not known, or a run has no kernel pass)."""
    b, n = [a.kernels for a in base], [a.kernels for a in new]
    if None in b or None in n:
        return ""
    found = cell_change((0, 0), b, n)
    named = judge([found])[0].named if found is not None else ()
    if not named or found.step_delta_ms is None:
        return ""
    top, step = named[0].delta_ms, found.step_delta_ms
    return named[0].category if top * step > 0 and abs(top) >= KERNEL_SHARE * abs(step) else ""


def signature(base: Sequence[CellAnatomy], new: Sequence[CellAnatomy], ratio: float) -> Signature | None:
    """The signature of tok/s changing by ``ratio`` (new ÷ base) between two groups of runs (None: no anatomy)."""
    if not base or not new or ratio <= 0:
        return None
    total = math.log(ratio)
    terms = step_terms(base, new)
    shares = {k: (v / total if total else 0.0) for k, (v, _) in terms.items()}
    term = max(shares, key=shares.get) if shares else ""
    return Signature(term, shares.get(term, 0.0), (_graph_mode(base), _graph_mode(new)), _padding(base, new),
                     _kernel(base, new))
