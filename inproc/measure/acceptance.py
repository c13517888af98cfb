"""Draft acceptance of a decode cell, from its step rows' per-step draft counts (``steps.SPEC_INTS``).

Each window step's row holds the drafts its returned batch verified, as the engine counted
them (vLLM's ``SpecDecodingStats``, per draft position too), so every figure here is derived
again from raw rows; over the window they sum to the engine's own counter differences
(``metrics.counter_delta``).

- **mean acceptance length** ``L = 1 + A / D``: tokens a verify step yields per draft, the bonus
  token included (A accepted draft tokens, D drafts);
- its **95 % interval**: a ratio estimator's, with blocks of consecutive steps as the sampling
  units (:func:`length_interval`), so drafts of one step, and of steps close together (the same
  requests, the same text), are not taken for independent trials;
- **conditional acceptance at position i**: of the drafts that reached position i (their first
  i - 1 tokens accepted, an i-th token proposed), the share whose i-th was accepted:
  ``accepted_at_i / min(accepted_at_(i-1), drafted_at_i)`` (position 1: over ``drafted_at_1``).
  Exact when every draft has k tokens (EAGLE, MTP, DSpark) or every draft is accepted; where draft
  lengths vary (n-gram) the denominator may count drafts that ended before i, so it is a lower bound.

A cell whose acceptance was forced (``--acceptance``) and whose interval excludes the forced
length is flagged (:attr:`AcceptanceFigures.not_applied`): the engine did not apply it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.measure.steps import SPEC_POSITIONS, StepTrace

CONFIDENCE = 0.95
MAX_BLOCKS = 30  # the interval's sampling units: up to this many blocks of consecutive steps
PSEUDO_DRAFTS = 0.5  # drafts added at each extreme, all accepted and none (length_interval)


@dataclass(frozen=True)
class AcceptanceFigures:
    """A decode window's drafts: totals, per position, the mean acceptance length with its interval."""

    drafts: int
    draft_tokens: int
    accepted_tokens: int
    accepted_at: tuple[int, ...]  # per position (1-based in the names): drafts whose first i tokens were accepted
    drafted_at: tuple[int, ...]  # per position: drafts of at least i tokens
    mean_length: float | None  # 1 + accepted_tokens / drafts
    length_low: float | None  # its 95 % interval (None: fewer than two blocks of steps with drafts)
    length_high: float | None
    reached_at: tuple[int, ...]  # per position: drafts that reached it (see the module docstring)
    conditional: tuple[float | None, ...]  # per position: accepted_at / reached_at (None: none reached it)
    forced_length: float | None = None  # the mean length forced (--acceptance); None: the engine's own

    @property
    def not_applied(self) -> str:
        """The flag of a forced cell whose measured interval excludes the forced length ("" otherwise)."""
        if self.forced_length is None or self.length_low is None or self.length_high is None:
            return ""
        if self.length_low <= self.forced_length <= self.length_high:
            return ""
        return (f"the engine did not apply the forced acceptance (measured {self.mean_length:.2f} for "
                f"{self.forced_length:.1f}; 95 % interval {self.length_low:.2f}-{self.length_high:.2f})")

    @classmethod
    def from_dict(cls, d: dict) -> "AcceptanceFigures":
        tup = lambda k: tuple(d.get(k) or ())  # noqa: E731
        return cls(int(d["drafts"]), int(d["draft_tokens"]), int(d["accepted_tokens"]), tup("accepted_at"),
                   tup("drafted_at"), d.get("mean_length"), d.get("length_low"), d.get("length_high"),
                   tup("reached_at"), tup("conditional"), d.get("forced_length"))


def _column(steps: StepTrace, name: str, rows: slice) -> np.ndarray | None:
    col = steps.columns.get(name)
    return None if col is None else col[rows]


def acceptance_figures(steps: StepTrace, first: int, last: int, forced_length: float | None = None) -> AcceptanceFigures | None:
    """The drafts of rows ``first..last``; None when no row there counted drafts (no speculation, not recorded)."""
    rows = slice(first, last + 1)
    drafts = _column(steps, "spec_drafts", rows)
    if drafts is None or not (drafts >= 0).any():
        return None
    known = drafts >= 0
    d = drafts[known]
    a = _column(steps, "spec_accepted_tokens", rows)[known]
    t = _column(steps, "spec_draft_tokens", rows)[known]
    accepted_at, drafted_at = _positions(steps, rows, known, "accepted"), _positions(steps, rows, known, "drafted")
    mean = 1 + a.sum() / d.sum() if d.sum() else None
    low, high = length_interval(d, a, len(drafted_at) or None)
    reached = reached_positions(accepted_at, drafted_at)
    return AcceptanceFigures(int(d.sum()), int(t.sum()), int(a.sum()), accepted_at, drafted_at,
                             float(mean) if mean is not None else None, low, high, reached,
                             tuple(acc / n if n else None for acc, n in zip(accepted_at, reached)), forced_length)


def _positions(steps: StepTrace, rows: slice, known: np.ndarray, kind: str) -> tuple[int, ...]:
    """Per position, the sum over the rows that counted it; positions no row counted are left off the end."""
    out = []
    for i in range(1, SPEC_POSITIONS + 1):
        col = _column(steps, f"spec_{kind}_at_{i}", rows)
        if col is None:
            break
        col = col[known]
        if not (col >= 0).any():
            break
        out.append(int(col[col >= 0].sum()))
    return tuple(out)


def reached_positions(accepted_at: tuple[int, ...], drafted_at: tuple[int, ...]) -> tuple[int, ...]:
    """Per position i, the drafts that reached it: ``drafted_at_1``, then ``min(accepted_at_(i-1), drafted_at_i)``."""
    drafted = lambda i: drafted_at[i] if i < len(drafted_at) else 0  # noqa: E731
    return tuple(drafted(0) if i == 0 else min(accepted_at[i - 1], drafted(i)) for i in range(len(accepted_at)))


def length_interval(drafts: np.ndarray, accepted: np.ndarray, k: int | None = None) -> tuple[float | None, float | None]:
    """The 95 % interval of ``1 + sum(accepted) / sum(drafts)`` over steps (each step's counts of its batch).

    Consecutive steps with drafts form ``B`` blocks (at most :data:`MAX_BLOCKS`, of equal size);
    over blocks ``j`` with drafts ``D_j`` and accepted ``A_j``, the ratio ``R = ΣA / ΣD`` has the
    linearized variance ``B / (B - 1) · Σ (A_j - R D_j)² / (ΣD)²`` and the interval is
    ``1 + R ± t(B - 1) · sd``. With ``k`` (tokens per draft) known, half a draft accepting all k and
    half a draft accepting none join the sums first (as Agresti and Coull add two successes and two
    failures to a proportion): without them the interval is too narrow when nearly every draft, or
    nearly none, is accepted (0.88 coverage at 5 % acceptance over 100 drafts; with them 0.94 to 0.99
    over 25 to 1,600 drafts at 2 % to 98 %, ``tests/measure/test_acceptance.py``); the ends are then
    kept to [1, k + 1]. None when fewer than two blocks exist.
    """
    has = drafts > 0
    d, a = drafts[has].astype(np.float64), accepted[has].astype(np.float64)
    blocks = min(MAX_BLOCKS, d.size)
    if blocks < 2:
        return None, None
    edges = np.linspace(0, d.size, blocks + 1).astype(int)
    db, ab = np.add.reduceat(d, edges[:-1]), np.add.reduceat(a, edges[:-1])
    if k:
        db, ab = np.append(db, [PSEUDO_DRAFTS, PSEUDO_DRAFTS]), np.append(ab, [PSEUDO_DRAFTS * k, 0.0])
    n = db.size
    ratio = ab.sum() / db.sum()
    var = n / (n - 1) * ((ab - ratio * db) ** 2).sum() / db.sum() ** 2
    from scipy.special import stdtrit

    half = float(stdtrit(blocks - 1, 0.5 + CONFIDENCE / 2)) * float(np.sqrt(var))
    return 1 + max(0.0, float(ratio) - half), 1 + min(float(k) if k else np.inf, float(ratio) + half)
