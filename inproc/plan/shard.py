"""One plan split over N runners (``inproc run --shard I/N``): every entry measured by exactly one shard.

Every shard builds the same plan (same settings, seed and engine capacity) and computes the
same split from it, so nothing is exchanged between runners; ``inproc merge`` checks the
split again when it puts the shards together.

**The split.** Entries are the plan's cold-prefill contexts and decode cells. They are
grouped in rows (a context's prefill and its cells), because a row's prefill primes the
context its cells share. The groups are dealt out costliest first, each to the shard with
the least cost so far (longest-processing-time first; ties go to the earlier group and
the lower shard). A row stays whole unless there are fewer groups than shards, or the
busiest shard ends up more than 10 % over the fair share (the plan's total cost ÷ N):
then the costliest whole row on it is split into its entries and the groups are dealt
again. A shard that gets a row's cells without its prefill primes the row on its first
cell (the runner does that for any row it has not primed). Each shard measures its
entries in plan order.

**The cost estimate** (seconds; only the ratios between entries matter):

- a cold prefill at context L: ``prefill_samples × L / PREFILL_TOK_S``, capped at the
  prefill budget plus one sample (the sample that crosses the budget still completes);
- a decode cell (L, C): its window W plus the prompt tokens it prefills before the
  window, ``/ PREFILL_TOK_S``: in shared mode the row's context once and C unique
  suffixes, in distinct mode C × L;
- a cell decided before running (Over capacity, Exceeds max model length): 0.

``PREFILL_TOK_S`` is an assumed prefill rate, not a measurement: it only sets how much a
long context weighs against a window.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from typing import Literal

from inproc.errors import UsageError
from inproc.plan.matrix import CellPlan, MatrixPlan
from inproc.units import cell_key

#: Assumed prompt tokens per second, for the cost estimate only.
PREFILL_TOK_S = 10_000.0
#: A row stays whole while the busiest shard is at most this far over the fair share.
BALANCE_TOLERANCE = 0.10
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not (isinstance(self.index, int) and isinstance(self.count, int) and 1 <= self.index <= self.count):
            raise UsageError(f"Bad shard {self.index!r}/{self.count!r}: give I/N with 1 ≤ I ≤ N, e.g. 1/2.")

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"2/4"`` -> Shard(2, 4); anything else is a one-line error naming the value."""
    found = _SHARD.match(text or "")
    if not found or not 1 <= int(found[1]) <= int(found[2]):
        raise UsageError(f"Bad --shard {text!r}: give I/N, the shard I (1..N) of N shards, e.g. --shard 1/2.")
    return Shard(int(found[1]), int(found[2]))


@dataclass(frozen=True)
class Entry:
    """One entry of a plan: a cold prefill at ``context``, or the decode cell ``context`` × ``concurrency``."""

    kind: Literal["prefill", "decode"]
    context: int
    concurrency: int = 0  # 0 for a prefill entry

    @property
    def key(self) -> str:
        return f"prefill {self.context}" if self.kind == "prefill" else cell_key(self.context, self.concurrency)


def planned_entries(prefill_contexts: tuple[int, ...], cells: tuple[tuple[int, int], ...]) -> int:
    """How many entries a plan holds (known before the engine is built)."""
    return len(set(prefill_contexts)) + len(set(cells))


def _rows(plan: MatrixPlan) -> list[list[Entry]]:
    """Entries grouped by row, in the runner's order: each context's prefill then its cells; prefill-only rows last."""
    cell_rows = list(dict.fromkeys(c.context for c in plan.cells))
    rows = []
    for context in cell_rows:
        row = [Entry("prefill", context)] if context in plan.prefill_contexts else []
        rows.append(row + [Entry("decode", c.context, c.concurrency) for c in plan.cells if c.context == context])
    return rows + [[Entry("prefill", c)] for c in plan.prefill_contexts if c not in cell_rows]


def entry_cost(entry: Entry, plan: MatrixPlan) -> float:
    """The estimated seconds an entry takes (the module docstring gives the rule)."""
    s = plan.settings
    if entry.kind == "prefill":
        one = entry.context / PREFILL_TOK_S
        return min(s.prefill_samples * one, s.prefill_budget_s + one)
    cell = _cell(plan, entry)
    if cell.pre_status:
        return 0.0
    C, L = cell.concurrency, cell.context
    prompt = L + C * min(s.suffix_tokens, L) if s.prompt_mode == "shared" else C * L
    return s.window_s + prompt / PREFILL_TOK_S


def _cell(plan: MatrixPlan, entry: Entry) -> CellPlan:
    return next(c for c in plan.cells if (c.context, c.concurrency) == (entry.context, entry.concurrency))


def _deal(groups: list[list[Entry]], cost: dict[Entry, float], count: int) -> list[list[int]]:
    """Longest-processing-time first: each group (costliest first) to the shard with the least cost so far."""
    totals = [sum(cost[e] for e in g) for g in groups]
    loads, members = [0.0] * count, [[] for _ in range(count)]
    for g in sorted(range(len(groups)), key=lambda i: (-totals[i], i)):
        target = min(range(count), key=lambda k: (loads[k], k))
        loads[target] += totals[g]
        members[target].append(g)
    return members


def _split(groups: list[list[Entry]], group: list[Entry]) -> None:
    at = groups.index(group)
    groups[at:at + 1] = [[e] for e in group]


def assign(plan: MatrixPlan, count: int) -> tuple[tuple[Entry, ...], ...]:
    """Every entry of ``plan`` on exactly one of ``count`` shards; each shard's entries in plan order.

    Rows are split only as the module docstring says: while there are fewer groups than shards,
    or while the busiest shard is more than ``BALANCE_TOLERANCE`` over the fair share.
    """
    groups = _rows(plan)
    cost = {e: entry_cost(e, plan) for g in groups for e in g}
    fair = sum(cost.values()) / count

    def group_cost(g: list[Entry]) -> float:
        return sum(cost[e] for e in g)

    while len(groups) < count and any(len(g) > 1 for g in groups):
        _split(groups, max((g for g in groups if len(g) > 1), key=group_cost))
    while True:
        members = _deal(groups, cost, count)
        busiest = max(members, key=lambda m: sum(group_cost(groups[i]) for i in m))
        whole = [groups[i] for i in busiest if len(groups[i]) > 1]
        if sum(group_cost(groups[i]) for i in busiest) <= fair * (1 + BALANCE_TOLERANCE) or not whole:
            break
        _split(groups, max(whole, key=group_cost))
    order = {e: i for i, e in enumerate(e for row in _rows(plan) for e in row)}
    return tuple(tuple(sorted((e for i in m for e in groups[i]), key=order.__getitem__)) for m in members)


def shard_plan(plan: MatrixPlan, shard: Shard) -> MatrixPlan:
    """The part of ``plan`` that shard ``shard`` measures (same settings and seed)."""
    mine = set(assign(plan, shard.count)[shard.index - 1])
    return MatrixPlan(plan.settings, plan.seed,
                      tuple(c for c in plan.prefill_contexts if Entry("prefill", c) in mine),
                      tuple(c for c in plan.cells if Entry("decode", c.context, c.concurrency) in mine))


def plan_id(plan: MatrixPlan) -> str:
    """A short fingerprint of the whole plan: settings, seed, and every entry with its verdict made beforehand.

    Shards of one plan carry the same id; the verdicts come from the engine's capacity, so two
    runners whose engines hold different pools make different plans.
    """
    body = {"settings": asdict(plan.settings), "seed": plan.seed, "prefill": list(plan.prefill_contexts),
            "cells": [[c.context, c.concurrency, c.max_tokens, c.pre_status] for c in plan.cells]}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
