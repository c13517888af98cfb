"""The slow-step rule's edges and words (``inproc.measure.slow``) on step rows whose times are exact binary fractions
(steps of 1/128 s, slow ones 1/4 s longer), so each threshold can be met exactly and each detail's numbers are known
by hand: the shares at exactly one half, the KV growth at exactly one block per request, which batches are alike,
the references' sizes at exactly MIN_STEPS, the window's own rows, the tail figures, and the online rule's references."""
from __future__ import annotations

import math

import numpy as np
import pytest

from inproc.measure import slow
from inproc.measure.metrics import Window
from inproc.measure.slow import reference_groups, slow_excess_s, slow_figures, slow_steps, threshold_s
from inproc.measure.slow_online import OnlineSlow, batch_kind
from inproc.measure.steps import StepTrace
from inproc.types import BatchShape, ForwardStats, StepResult

N = 200
STEP = 1 / 128  # every step's time, exact in binary
HOST = 2 ** -10 + 2 ** -11 + 2 ** -12  # schedule + update + probe of every step, exact too


def as_kind(kind):
    return kind  # these tests hand the online rule each step's kind itself


def exact(n: int = N, **cols) -> dict[str, np.ndarray]:
    """``n`` identical decode steps of 4 requests (FULL graphs, 4 tokens), starting every 1/64 s."""
    start = np.arange(n) / 64
    base = dict(t_start_s=start, t_end_s=start + STEP, schedule_s=np.full(n, 2 ** -10), update_s=np.full(n, 2 ** -11),
                probe_s=np.full(n, 2 ** -12), num_running=np.full(n, 4), num_waiting=np.zeros(n),
                num_scheduled_tokens=np.full(n, 4), num_preempted=np.zeros(n), num_prefill_reqs=np.zeros(n),
                num_prefill_tokens=np.zeros(n), num_decode_reqs=np.full(n, 4), num_decode_tokens=np.full(n, 4),
                kv_used_blocks=40 + np.arange(n) // 8, gc_count=np.zeros(n), gc_generation=np.full(n, -1),
                gc_ns=np.zeros(n), gc_between_count=np.zeros(n), gc_between_generation=np.full(n, -1),
                gc_between_ns=np.zeros(n), graph_mode=np.full(n, 2), num_unpadded_tokens=np.full(n, 4),
                num_padded_tokens=np.full(n, 4))
    base.update(cols)
    return base


def plant(c: dict, row: int, by_s: float = 0.25) -> None:
    """Step ``row`` takes ``by_s`` longer (later steps start later by as much)."""
    c["t_end_s"][row] += by_s
    c["t_start_s"][row + 1:] += by_s
    c["t_end_s"][row + 1:] += by_s


def causes(c: dict, w: Window | None = None) -> dict[int, tuple[str, str]]:
    return {s.row: (s.cause, s.detail) for s in slow_steps(StepTrace.of(**c), w or Window(0.0, 1.0, 0, N - 1))}


def test_gc_and_host_time_of_exactly_half_the_excess_are_the_cause_and_the_details_give_their_numbers():
    """Excess 250 ms: 125 ms of GC is half of it, a cause (``>`` for ``>=`` is not); 125 ms of host time beyond the
    reference's median likewise. 39 ms of host time is not: the rest is named as outside the scheduler."""
    c = exact()
    for row in (20, 60, 100):
        plant(c, row)
    c["gc_count"][20], c["gc_generation"][20], c["gc_ns"][20] = 3, 1, 125_000_000
    c["schedule_s"][60] += 0.125
    c["schedule_s"][100] += 0.0390625  # 39.0625 ms: 250 − 39.0625 = 210.9375 ms outside the scheduler
    got = causes(c)
    assert got[20] == ("gc", "GC generation 1, 125.0 ms (3 collections)")
    assert got[60] == ("host", "scheduler time +125.0 ms of the +250.0 ms")
    assert got[100] == ("unexplained", "no cause in the step's records: +210.9 ms of the +250.0 ms outside the scheduler")


@pytest.mark.parametrize("column", ["update_s", "probe_s"])
def test_host_time_counts_the_update_and_the_probe_as_the_schedule(column):
    """125 ms more of the engine's output update (or of inproc's probe) is host time like the schedule's: half the
    250 ms excess, the cause. Where it entered the sum with the wrong sign, the step would be unexplained."""
    c = exact()
    plant(c, 60)
    c[column][60] += 0.125
    assert causes(c)[60] == ("host", "scheduler time +125.0 ms of the +250.0 ms")


def test_without_host_times_nothing_is_said_about_the_scheduler():
    c = exact(schedule_s=np.full(N, np.nan))
    plant(c, 50)
    assert causes(c) == {50: ("unexplained", "no cause in the step's records")}


def test_one_preempted_request_is_a_cause():
    c = exact()
    plant(c, 50)
    c["num_preempted"][50] = 1
    assert causes(c) == {50: ("preemption", "1 requests preempted")}


def test_kv_growth_of_one_block_per_request_is_no_cause_and_one_more_is():
    """At row 73 (the natural growth of a block every 8 steps came at 72): 4 blocks for 4 requests is no cause,
    5 is. Six running of which 4 decode: 5 blocks is no cause (the batch is what the engine runs, not what it
    scheduled). An empty batch counts as one request: 2 blocks are a cause."""
    for grew, running, decode, want in ((4, 4, 4, None), (5, 4, 4, "KV blocks in use grew by 5 for 4 requests"),
                                        (5, 6, 4, None), (3, 2, 4, None),
                                        (2, 0, 0, "KV blocks in use grew by 2 for 1 requests")):
        c = exact()
        plant(c, 73)
        c["kv_used_blocks"][73:] += grew
        c["num_running"][73], c["num_decode_reqs"][73] = running, decode
        if decode == 0:
            c["num_scheduled_tokens"][73] = c["num_unpadded_tokens"][73] = c["num_padded_tokens"][73] = 0
        cause, detail = causes(c)[73]
        assert (cause, detail) == ("kv", want) if want else cause == "unexplained", (grew, running, decode)


@pytest.mark.parametrize("counts, row, grew", [((0, 0, 30, 30), 40, 30), ((-1, 0, 30, 30), 40, 30),
                                               ((0, 0, 30, -1), 40, 30), ((0, -1, 30, 30), 40, None),
                                               ((None, None, 30, 30), 0, None)])
def test_kv_growth_is_read_between_a_step_and_the_one_before_when_both_are_known(counts, row, grew):
    """Blocks in use two rows before, the row before, the row and the row after (-1: not counted): from 0 to 30
    is growth whatever the other rows hold; from an unknown count, or at the first step, nothing is read."""
    c = exact(kv_used_blocks=np.full(N, 30))
    plant(c, row)
    for offset, count in zip((-2, -1, 0, 1), counts):
        if count is not None:
            c["kv_used_blocks"][row + offset] = count
    want = ("kv", f"KV blocks in use grew by {grew} for 4 requests") if grew else ("unexplained",
                                                                                   "no cause in the step's records: "
                                                                                   "+250.0 ms of the +250.0 ms outside "
                                                                                   "the scheduler")
    assert causes(c)[row] == want


def test_kv_growth_at_the_second_step_is_read_against_the_first():
    c = exact(kv_used_blocks=np.full(N, 30))
    plant(c, 1)
    c["kv_used_blocks"][1:] = 60
    assert causes(c)[1] == ("kv", "KV blocks in use grew by 30 for 4 requests")


def test_only_batches_alike_in_requests_and_tokens_are_compared_for_their_graph_mode():
    """A 5-token batch that ran PIECEWISE among 4-token FULL ones did not fall back: none like it ran FULL. An
    unknown mode (-1) is no fallback either. Where like batches mostly ran eager (NONE), an eager one did not."""
    c = exact()
    plant(c, 50)
    c["num_scheduled_tokens"][50], c["graph_mode"][50] = 5, 1
    plant(c, 90)
    c["graph_mode"][90] = -1
    got = causes(c)
    assert (got[50][0], got[90][0]) == ("unexplained", "unexplained")
    # Five 3-request batches of 3 tokens, three eager and two piecewise: too few for a reference of their own.
    c = exact()
    for row, mode in zip(range(100, 105), (0, 0, 0, 1, 1)):
        c["num_decode_reqs"][row] = c["num_scheduled_tokens"][row] = 3
        c["graph_mode"][row] = mode
    plant(c, 101)
    assert causes(c)[101][0] == "unexplained"


def test_references_of_exactly_min_steps_and_shapes_that_differ_stay_apart():
    """8 steps of (2 requests, 2 tokens) are a shape reference of exactly MIN_STEPS (``>`` for ``>=`` drops it),
    as are 8 of (4, 4); 4 of (3, 2) and 4 of (1, 3) are two shapes, too few either way, judged against the window
    (numbered together without care, 3·2 and 1·3 collide into one shape of 8). Each reference's median is its own
    rows': 1/128 s for the shapes, the window's too."""
    dec = np.array([2] * 8 + [4] * 8 + [3] * 4 + [1] * 4)
    tok = np.array([2] * 8 + [4] * 8 + [2] * 4 + [3] * 4)
    n = dec.size
    c = exact(n, num_decode_reqs=dec, num_scheduled_tokens=tok)
    c["t_end_s"][:8] += 1 / 128  # the first shape's steps take 2/128 s
    got = [(ref.kind, judged.tolist(), ref.median_s) for ref, judged in reference_groups(StepTrace.of(**c),
                                                                                         Window(0.0, 1.0, 0, n - 1))]
    assert got == [("shape", list(range(8)), 2 / 128), ("shape", list(range(8, 16)), 1 / 128),
                   ("window", list(range(16, 24)), 1 / 128)]


def test_a_window_of_exactly_min_steps_is_judged_and_steps_outside_it_are_not():
    """A window of MIN_STEPS = 8 steps flags its slow one; a slow step before the window (row 2 of a window from
    row 5) is not judged, and the window's median is of its own steps (the 30 warm-up steps take 1 s each)."""
    c = exact(8)
    plant(c, 3)
    assert list(causes(c, Window(0.0, 1.0, 0, 7))) == [3]
    c = exact(60)
    c["t_end_s"][30:] += 0  # keep the window's steps as they are
    c["t_end_s"][:30] = c["t_start_s"][:30] + 1.0  # warm-up steps of 1 s: outside the window
    plant(c, 2, 5.0)
    plant(c, 45)
    trace = StepTrace.of(**c)
    w = Window(0.0, 4.0, 30, 59)
    assert [s.row for s in slow_steps(trace, w)] == [45]
    (ref, judged), = reference_groups(trace, w)
    assert ref.median_s == STEP and judged.tolist() == list(range(30, 60))


def test_the_tail_figures_of_a_window_with_four_slow_steps():
    """196 steps of 7.8125 ms and four 250, 500, 750 and 1000 ms longer: median 7.8125 ms, p99 (linear, at rank
    197.01 of 0..199) 507.8125 + 0.01 × 250 = 510.3125 ms, max 1007.8125 ms; the slow steps' share of a 4 s window
    is 2.53125 / 4; GC of 1.5 ms inside steps and 3 + 1.5 ms between them."""
    c = exact()
    for row, by in ((10, 0.25), (20, 0.5), (30, 0.75), (40, 1.0)):
        plant(c, row, by)
    c["gc_ns"][5], c["gc_count"][5], c["gc_generation"][5] = 1_500_000, 1, 0
    c["gc_between_ns"][6], c["gc_between_ns"][7] = 3_000_000, 1_500_000
    figs = slow_figures(StepTrace.of(**c), Window(0.0, 4.0, 0, N - 1))
    assert (figs.count, figs.median_ms, figs.p99_ms, figs.max_ms) == (4, 7.8125, pytest.approx(510.3125, rel=1e-12),
                                                                      1007.8125)
    assert figs.time_share == pytest.approx((0.2578125 + 0.5078125 + 0.7578125 + 1.0078125) / 4, rel=1e-12)
    assert (figs.gc_ms, figs.gc_between_ms) == (pytest.approx(1.5, rel=1e-12), pytest.approx(4.5, rel=1e-12))
    assert figs.excess_ms == pytest.approx(2500 / N, rel=1e-12)  # (250 + 500 + 750 + 1000) ms over 200 steps
    # An unknown count between steps (-1) makes the sum unknown; a window of no length has no share.
    c["gc_between_ns"][8] = -1
    unknown = slow_figures(StepTrace.of(**c), Window(1.0, 1.0, 0, N - 1))
    assert unknown.gc_between_ms is None and unknown.time_share == 0.0
    assert slow_excess_s([], np.array([])) == 0.0


def test_the_limit_is_eight_scaled_mads_or_twice_the_median_above_it():
    assert threshold_s(1.0, 0.5) == pytest.approx(1.0 + 8 * 1.4826 * 0.5)
    assert threshold_s(1.0, 0.01) == 3.0


def test_online_the_ninth_step_of_a_kind_is_judged_and_one_at_exactly_the_limit_is_not_slow():
    """Eight steps of 1/128 s: the ninth is judged, a 1 s one is slow (``>`` for ``>=`` on the count waits for a
    tenth). Then 3/128 s is the limit exactly (median 1/128, MAD 0, floor 2) and is not slow; a nanosecond more is,
    against the 10 rows of the shape so far."""
    judge = OnlineSlow(as_kind)
    assert [judge.judge(i, STEP, (4, 4, 2)) for i in range(8)] == [None] * 8
    ninth = judge.judge(8, 1.0, (4, 4, 2))
    assert (ninth.kind, ninth.rows.tolist(), ninth.median_s, ninth.mad_s) == ("shape", list(range(8)), STEP, 0.0)
    assert judge.judge(9, 3 * STEP, (4, 4, 2)) is None
    ref = judge.judge(10, 3 * STEP + 1e-9, (4, 4, 2))
    assert (ref.kind, ref.rows.tolist(), ref.median_s, ref.mad_s) == ("shape", list(range(10)), STEP, 0.0)
    # A new shape of the same decode batch is judged against the batch, a new batch against the window.
    assert judge.judge(11, 1.0, (4, 5, 2)).kind == "decode batch"
    assert judge.judge(12, 1.0, (3, 3, 2)).kind == "window"


def test_online_references_hold_every_step_of_the_kind_before_it():
    """16 steps of 1/128 s, then slow ones: each slow step names a reference of every step of its kind before it,
    16 to 24 of them (a reference refreshed only now and then names 16, 16, 18, 18, ...)."""
    judge = OnlineSlow(as_kind)
    for i in range(16):
        judge.judge(i, STEP, (4, 4, 2))
    refs = [judge.judge(i, 4 * STEP, (4, 4, 2)) for i in range(16, 25)]
    assert [r.rows.tolist() for r in refs] == [list(range(i)) for i in range(16, 25)]


def test_online_median_and_mad_are_those_of_the_steps_before_at_every_step():
    """16 steps of 1/128 s and 16 of 2/128 s: median 1.5/128, MAD 0.5/128, limit 1.5 + 8 × 1.4826 × 0.5 = 7.43
    (/128). A step of 4.4/128 is under it; one of 7.5/128 is over, and its reference reads those figures. A
    reference last computed at 28 steps (median and MAD 1/128 and 0, limit 3/128) flags the 4.4/128 one."""
    def judged_32() -> OnlineSlow:
        judge = OnlineSlow(as_kind)
        for i in range(16):
            judge.judge(i, STEP, (4, 4, 2))
        for i in range(16, 32):
            assert judge.judge(i, 2 * STEP, (4, 4, 2)) is None
        return judge

    assert judged_32().judge(32, 4.4 * STEP, (4, 4, 2)) is None
    ref = judged_32().judge(32, 7.5 * STEP, (4, 4, 2))
    assert ref is not None and ref.rows.tolist() == list(range(32))
    assert ref.median_s == pytest.approx(1.5 * STEP) and ref.mad_s == pytest.approx(0.5 * STEP)
    assert ref.limit_s == pytest.approx(STEP * (1.5 + 8 * 1.4826 * 0.5))


def test_online_a_step_at_exactly_a_mad_limit_is_not_slow_and_one_just_above_is():
    """The 32 steps above (median 1.5/128, MAD 0.5/128): the limit is set by the MAD, not the floor; a step at it
    exactly is not slow (``>=`` for ``>`` flags it), the next float above is."""
    limit = threshold_s(1.5 * STEP, 0.5 * STEP)
    assert limit > 3 * 1.5 * STEP  # beyond the floor: the MAD sets it

    def judged_32() -> OnlineSlow:
        judge = OnlineSlow(as_kind)
        for i in range(32):
            judge.judge(i, STEP if i < 16 else 2 * STEP, (4, 4, 2))
        return judge

    assert judged_32().judge(32, limit, (4, 4, 2)) is None
    assert judged_32().judge(32, math.nextafter(limit, math.inf), (4, 4, 2)) is not None


@pytest.mark.parametrize("n", [9, 10, 17, 24])
def test_online_reference_reads_the_median_and_mad_of_distinct_times_odd_and_even(n):
    """Distinct times in shuffled order (odd and even counts): a slow step's reference reads numpy's median and MAD
    of the steps before it (an index off by one in the sorted times, or the odd count read as even, moves them)."""
    rng = np.random.default_rng(n)
    times = list(rng.permutation(np.arange(1, n + 1)) * STEP / 4 + STEP)
    judge = OnlineSlow(as_kind)
    for i, t in enumerate(times):
        judge.judge(i, float(t), (4, 4, 2))
    ref = judge.judge(n, 1.0, (4, 4, 2))
    med = float(np.median(times))
    assert (ref.median_s, ref.mad_s) == (med, float(np.median(np.abs(np.asarray(times) - med))))


def brute_force_online(steps: list[tuple[float, int, int, int]]) -> list[tuple[str, list[int], float, float] | None]:
    """The online rule from its definition, step by step: each step against every earlier step of its kind (the same
    shape; else the same decode batch; else the window) once that kind has 8, slow beyond median + max(8 × 1.4826 ×
    MAD, 2 × median)."""
    out = []
    for i, (t, dec, tok, mode) in enumerate(steps):
        found = None
        for name, alike in (("shape", lambda s: s[1:] == (dec, tok, mode)), ("decode batch", lambda s: s[1] == dec),
                            ("window", lambda s: True)):
            rows = [j for j in range(i) if alike(steps[j])]
            if len(rows) >= 8:
                ts = np.array([steps[j][0] for j in rows])
                med = float(np.median(ts))
                mad = float(np.median(np.abs(ts - med)))
                if t > med + max(8 * 1.4826 * mad, 2 * med):
                    found = (name, rows, med, mad)
                break
        out.append(found)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_online_rule_flags_what_its_definition_flags_with_steps_put_aside(seed):
    """600 steps: mostly one shape whose time drifts up and down, now and then another shape or batch, slow steps
    planted, some just past the floor's limit. Every step's verdict, reference rows, median and MAD equal the rule's
    definition computed from scratch (a bound that let a slow step be put aside, or steps sorted in out of order, or
    left out, would differ)."""
    rng = np.random.default_rng(seed)
    steps = []
    for i in range(600):
        base = STEP * (1 + 0.5 * np.sin(i / 40))
        shape = (4, 4, 2) if rng.random() < 0.9 else ((4, 5, 2) if rng.random() < 0.5 else (3, 3, 1))
        t = base * (1 + 0.05 * rng.standard_normal())
        if rng.random() < 0.03:
            t = base * rng.choice([2.9, 3.1, 3.5, 10.0])
        steps.append((float(t), *shape))
    judge = OnlineSlow(as_kind)
    got = []
    for i, (t, dec, tok, mode) in enumerate(steps):
        ref = judge.judge(i, t, (dec, tok, mode))
        got.append(None if ref is None else (ref.kind, ref.rows.tolist(), ref.median_s, ref.mad_s))
    want = brute_force_online(steps)
    assert [g is not None for g in got] == [w is not None for w in want]
    assert sum(w is not None for w in want) >= 3  # the comparison has slow steps in it
    for g, w in zip(got, want):
        if w is not None:
            assert g[:2] == w[:2] and g[2] == pytest.approx(w[2], rel=1e-12) and g[3] == pytest.approx(w[3], rel=1e-12)


def test_online_steps_put_aside_can_lower_the_median_and_a_step_past_the_lowered_limit_is_slow():
    """21 steps of 1.1/128 s and then 19 of 1/128: the lower middle is 1.1/128, and a limit read there without
    room for the steps to come would be 3.3/128. Then 3 of 0.9/128, not slow, lower the median to 1/128 and the MAD
    to 0.1/128 (limit 3/128): a step of 3.2/128 is slow, whenever the steps put aside were sorted in."""
    steps = ([(1.1 * STEP, 4, 4, 2)] * 21 + [(STEP, 4, 4, 2)] * 19 + [(0.9 * STEP, 4, 4, 2)] * 3
             + [(3.2 * STEP, 4, 4, 2)])
    judge = OnlineSlow(as_kind)
    got = [judge.judge(i, t, (d, k, m)) for i, (t, d, k, m) in enumerate(steps)]
    want = brute_force_online(steps)
    assert [i for i, r in enumerate(got) if r is not None] == [i for i, r in enumerate(want) if r is not None]
    assert got[-1] is not None and got[-1].median_s == pytest.approx(want[-1][2])


def test_online_a_long_kind_puts_more_steps_aside_and_its_bound_leaves_room_for_all_of_them():
    """1,070 steps of 1.1/128 s, 930 of 1/128 and one of 3.05/128 (past three times the shortest, so every step is
    sorted in to judge it; not slow against a median of 1.1/128): the kind's lower middle is 1.1/128, and so is the
    place 64 below it. Then 160 of 0.9/128 (a window of 2,000 steps puts up to one in eight of them aside), which
    lower the median to 1/128 and the limit to 3/128: a step of 3.2/128 is slow. A bound read 64 places below the
    middle (room for 64 steps put aside, not 160) is 3.3/128 and would put it aside."""
    a = (4, 4, 2)
    steps = [(1.1 * STEP, *a)] * 1070 + [(STEP, *a)] * 930 + [(3.05 * STEP, *a)] + [(0.9 * STEP, *a)] * 160 \
        + [(3.2 * STEP, *a)]
    judge = OnlineSlow(as_kind)
    got = [judge.judge(i, t, (d, k, m)) for i, (t, d, k, m) in enumerate(steps)]
    assert [i for i, r in enumerate(got) if r is not None] == [2161]
    ref = got[-1]
    assert ref.kind == "shape" and ref.median_s == STEP and ref.mad_s == pytest.approx(0.1 * STEP)
    assert ref.rows.tolist() == list(range(2161))


def test_online_a_step_is_put_aside_by_its_time_only_under_three_times_the_shortest_step():
    """20 steps of one shape at 10/128 s, then 12 of another at 1/128, put aside by their time alone (each under
    three times the shortest step so far). A step of that other shape at 3.5/128 is slow (its shape's median is
    1/128, its limit 3/128); one at exactly 3/128 is not. A time-only bound read from anything but the shortest
    step (the window's median: 30/128; the first steps: 30/128) would put the slow one aside unjudged."""
    steps = [(10 * STEP, 4, 4, 2)] * 20 + [(STEP, 2, 2, 2)] * 12 + [(3 * STEP, 2, 2, 2), (3.5 * STEP, 2, 2, 2)]
    judge = OnlineSlow(as_kind)
    got = [judge.judge(i, t, (d, k, m)) for i, (t, d, k, m) in enumerate(steps)]
    assert [i for i, r in enumerate(got) if r is not None] == [33]
    assert got[33].kind == "shape" and got[33].median_s == STEP and got[33].rows.tolist() == list(range(20, 33))


def test_online_kinds_are_read_only_for_steps_the_time_does_not_tell():
    """200 steps of one shape at 1/128 s: their kinds are read only when the steps put aside are sorted in, each
    once; a step past three times the shortest is read as it comes (and judged: slow), 201 reads in all. Reading
    each step's kind as it comes, and again when it is sorted in, would read more."""
    reads = []

    def counted(kind):
        reads.append(kind)
        return kind

    judge = OnlineSlow(counted)
    for i in range(200):
        assert judge.judge(i, STEP, (4, 4, 2)) is None
    assert judge.judge(200, 3.5 * STEP, (4, 4, 2)) is not None
    assert len(reads) == 200 + 1


def test_online_a_step_is_put_aside_only_under_its_own_shapes_bound():
    """60 steps of another shape of the same decode batch at 10/128 s, then 20 of this shape at 1/128: this shape's
    limit is 3/128, its decode batch's median 10/128. A step of 5/128 of this shape is slow (a bound read from the
    decode batch, 30/128, would put it aside)."""
    steps = [(10 * STEP, 4, 5, 2)] * 60 + [(STEP, 4, 4, 2)] * 20 + [(5 * STEP, 4, 4, 2)]
    judge = OnlineSlow(as_kind)
    got = [judge.judge(i, t, (d, k, m)) for i, (t, d, k, m) in enumerate(steps)]
    assert [i for i, r in enumerate(got) if r is not None] == [80]
    assert got[80].kind == "shape" and got[80].rows.tolist() == list(range(60, 80))


def test_online_a_step_past_three_shortest_is_put_aside_only_under_its_own_shapes_bound():
    """One step of 1/128 s first (three times it, 3/128, puts no later step aside by its time). Then 700 of another
    shape of the same decode batch at 10/128 and 300 of this shape at 9/128, its first 8 judged against the decode
    batch, the last ones put aside under this shape's bound. This shape's limit is 27/128: a step of 29/128 is
    slow. A bound read from the decode batch's times (7 in 10 at 10/128; the place an eighth of the window below
    their middle too: 30/128) would put it aside."""
    steps = [(STEP, 2, 2, 2)] + [(10 * STEP, 4, 5, 2)] * 700 + [(9 * STEP, 4, 4, 2)] * 300 + [(29 * STEP, 4, 4, 2)]
    judge = OnlineSlow(as_kind)
    got = [judge.judge(i, t, (d, k, m)) for i, (t, d, k, m) in enumerate(steps)]
    assert [i for i, r in enumerate(got) if r is not None] == [1001]
    ref = got[1001]
    assert ref.kind == "shape" and ref.median_s == 9 * STEP and ref.rows.tolist() == list(range(701, 1001))


def test_online_no_step_is_put_aside_before_the_kind_has_room_for_the_steps_to_come():
    """Seven steps of 1/128 s and one of 2/128: the ninth, of 4/128, is judged against a median of 1/128 (limit
    3/128) and is slow. A bound read before the kind has room below its middle for the steps put aside (at the
    last place, 2/128, limit 6/128) would have put it aside."""
    judge = OnlineSlow(as_kind)
    for i in range(7):
        assert judge.judge(i, STEP, (4, 4, 2)) is None
    assert judge.judge(7, 2 * STEP, (4, 4, 2)) is None
    ref = judge.judge(8, 4 * STEP, (4, 4, 2))
    assert ref is not None and ref.median_s == STEP and ref.rows.tolist() == list(range(8))


@pytest.mark.parametrize("res, kind", [
    (StepResult((), 3, 0, 24, batch=BatchShape(1, 16, 2, 8), forward=ForwardStats("FULL")), (2, 24, 2)),
    (StepResult((), 3, 0, 24, batch=BatchShape(1, 16, 2, 8), forward=ForwardStats("PIECEWISE")), (2, 24, 1)),
    # The forward of a batch formed a step earlier (async scheduling): this step's mode is not known.
    (StepResult((), 3, 0, 24, batch=BatchShape(1, 16, 2, 8), returned_lag=1, forward=ForwardStats("FULL")), (2, 24, -1)),
    (StepResult((), 3, 0, 24, batch=BatchShape(1, 16, 2, 8), forward=ForwardStats("eager?")), (2, 24, -1)),
    (StepResult((), 3, 0, 24, batch=BatchShape(1, 16, 2, 8)), (2, 24, -1)),
    (StepResult((), 3, 0, 7), (-1, 7, -1)),  # no batch shape reported
])
def test_a_steps_kind_as_the_online_rule_reads_it(res, kind):
    """Fails on a mode read from a forward the step did not form, a mode index off by one, or the decode
    requests read from another field of the batch (prefill requests, decode tokens)."""
    assert batch_kind(res) == kind
