"""The split of a plan over N shards: every entry once, rows kept whole where they can be, balanced by cost."""
from __future__ import annotations

import itertools

import pytest

from inproc import types as st
from inproc.errors import UsageError
from inproc.plan.matrix import make_plan
from inproc.plan.settings import MatrixSettings
from inproc.plan.shard import BALANCE_TOLERANCE, Entry, PREFILL_TOK_S, Shard, assign, entry_cost, parse_shard, plan_id, shard_plan
from tests.plan.test_matrix import cap


def plan(contexts=(256, 1024, 2048, 4096), concurrency=(1, 2, 4, 8), seed=1, **kw):
    s = MatrixSettings(contexts=contexts, concurrency=concurrency, window_s=kw.pop("window_s", 2.0), max_output=256, **kw)
    return make_plan(s, cap(), seed)


def all_entries(p):
    return [Entry("prefill", c) for c in p.prefill_contexts] + [Entry("decode", c.context, c.concurrency) for c in p.cells]


@pytest.mark.parametrize("text,index,count", [("1/2", 1, 2), ("2/2", 2, 2), (" 3 / 8 ", 3, 8), ("1/1", 1, 1)])
def test_parse_shard(text, index, count):
    assert parse_shard(text) == Shard(index, count)


@pytest.mark.parametrize("text", ["0/2", "3/2", "2", "1/0", "a/b", "", "1/2/3", "-1/2"])
def test_bad_shard_is_one_line_naming_it(text):
    with pytest.raises(UsageError, match=r"Bad --shard .*give I/N"):
        parse_shard(text)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 7, 20])
def test_every_entry_on_exactly_one_shard(count):
    p = plan()
    parts = assign(p, count)
    flat = [e for part in parts for e in part]
    assert sorted(flat, key=lambda e: e.key) == sorted(all_entries(p), key=lambda e: e.key)
    assert len(flat) == len(set(flat)) and len(parts) == count
    assert all(parts), "every shard gets at least one entry while there are as many entries as shards"
    # shard_plan gives the same parts, and each keeps plan order.
    for i in range(count):
        sub = shard_plan(p, Shard(i + 1, count))
        assert set(all_entries(sub)) == set(parts[i])
        assert [c.key for c in sub.cells] == [c.key for c in p.cells if c in sub.cells]


def test_cheap_rows_stay_whole_so_the_prefill_primes_its_cells():
    p = plan(contexts=(256, 512, 768, 1024), concurrency=(1, 2))
    parts = assign(p, 2)
    for part in parts:
        contexts = {e.context for e in part}
        for L in contexts:  # a row on this shard is all here: its prefill and both cells
            assert {Entry("prefill", L), Entry("decode", L, 1), Entry("decode", L, 2)} <= set(part)
    assert [len({e.context for e in part}) for part in parts] == [2, 2]


def test_a_row_dearer_than_a_fair_share_is_split():
    p = plan(contexts=(256,), concurrency=(1, 2, 4, 8))  # one row: it must be split over both shards
    a, b = assign(p, 2)
    assert a and b and {e.context for e in a + b} == {256}
    sub = shard_plan(p, Shard(2, 2))
    assert sub.cells and all(c.context == 256 for c in sub.cells)


def test_loads_are_balanced_and_rows_split_only_for_balance():
    # Three rows of six 2 s cells: kept whole, two shards would hold 2 rows and 1 (about 25 s vs 12 s).
    p = plan(contexts=(256, 1024, 4096), concurrency=(1, 2, 3, 4, 5, 6))
    for count in (2, 3, 4, 5):
        parts = assign(p, count)
        loads = [sum(entry_cost(e, p) for e in part) for part in parts]
        assert max(loads) <= sum(loads) / count * (1 + BALANCE_TOLERANCE), (count, loads)
    # Two shards: one row is split, the other two stay whole (their prefill primes their cells).
    whole = [L for L in (256, 1024, 4096) if sum(any(e.context == L for e in part) for part in assign(p, 2)) == 1]
    assert len(whole) == 2


def test_cost_estimate():
    p = plan(contexts=(1024, 4096), concurrency=(1, 8), window_s=2.0, prefill_samples=2, prompt_mode="shared")
    cost = {e.key: entry_cost(e, p) for e in all_entries(p)}
    assert cost["prefill 4096"] == pytest.approx(2 * 4096 / PREFILL_TOK_S)  # ∝ context × samples
    assert cost["1024x1"] == pytest.approx(2.0 + (1024 + 32) / PREFILL_TOK_S)  # window + shared context + suffix
    over = next(c for c in p.cells if c.pre_status)
    assert over.pre_status == st.OVER_CAPACITY and cost[over.key] == 0.0  # not run: costs nothing
    distinct = plan(contexts=(1024,), concurrency=(4,), window_s=2.0, prompt_mode="distinct")
    assert entry_cost(Entry("decode", 1024, 4), distinct) == pytest.approx(2.0 + 4 * 1024 / PREFILL_TOK_S)
    budget = plan(contexts=(1024,), concurrency=(1,), prefill_samples=100, prefill_budget_s=0.5)
    assert entry_cost(Entry("prefill", 1024), budget) == pytest.approx(0.5 + 1024 / PREFILL_TOK_S)


def test_plan_id_names_the_whole_plan():
    assert plan_id(plan()) == plan_id(plan())
    others = [plan(seed=2), plan(concurrency=(1, 2, 4)), plan(window_s=3.0),
              make_plan(plan().settings, cap(blocks=400, usable=399), 1)]  # a bigger pool: other verdicts
    ids = [plan_id(p) for p in others]
    assert plan_id(plan()) not in ids and len(set(ids)) == len(ids)


def test_split_is_the_same_on_every_runner():
    # Each runner computes the split alone: equal plans, equal splits, whatever the order of the calls.
    splits = [assign(plan(), 3) for _ in range(3)]
    assert all(s == splits[0] for s in splits)
    for a, b in itertools.combinations(assign(plan(), 3), 2):
        assert not set(a) & set(b)
