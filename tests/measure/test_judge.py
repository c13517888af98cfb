"""A cell's status from its figures (``inproc.measure.judge``): each threshold checked just under, at and over
it, and each reason by its exact words, on figures written here (what an engine's counters would give)."""
from __future__ import annotations

import dataclasses

import pytest

from inproc import types as st
from inproc.measure.figures import DecodeFigures, PrefillFigures
from inproc.measure.judge import QUEUED_ACTIVE_FRACTION, Verdict, judge_decode, judge_prefill, kv_figures, queued_reason
from inproc.measure.kv import KvUsage
from inproc.plan.capacity import CapacityCheck
from inproc.types import Capacity

CAPACITY = Capacity(num_blocks=100, block_size=16, kv_tokens=1600, groups=(), max_num_seqs=10,
                    max_num_batched_tokens=None, max_model_len=2048)
# Ten requests running all the window, none waiting, no preemption: the figures of a Valid cell at C = 10.
CALM = DecodeFigures(total_tok_s=500.0, per_request_tok_s=50.0, ttft_ms=20.0, tbt_ms=20.0, avg_active=10.0,
                     completed=0, output_tokens=1000, window_s=2.0, max_waiting=0, harness_overhead=0.01,
                     preemptions=0, spec_acceptance_rate=None, spec_mean_acceptance_length=None)
ESTIMATE = CapacityCheck(fits=True, blocks_needed=1234, blocks_available=5000, tokens_needed=19744,
                         tokens_available=80000, reference_tokens_needed=20480, reference_fits=True,
                         peak_blocks_needed=5678)


def fig(**change) -> DecodeFigures:
    return dataclasses.replace(CALM, **change)


def test_a_cold_prefill_is_valid_and_any_cached_or_prefix_hit_token_is_an_error_naming_both_counts():
    ok = PrefillFigures(ttft_ms=10.0, prompt_tok_s=1e4, steps=1, samples=3, cached_tokens=0, prefix_hits=0)
    assert judge_prefill(ok) == Verdict(st.VALID, "", ("cold_cache",))
    # Either counter alone makes it an Error ("and" for "or" passes one of these).
    for cached, hits in ((3, 0), (0, 5)):
        got = judge_prefill(dataclasses.replace(ok, cached_tokens=cached, prefix_hits=hits))
        assert got == Verdict(st.ERROR, f"prefill was not cold: {cached} cached prompt tokens, "
                                        f"{hits} prefix-cache hit tokens", ())


def test_requests_are_queued_below_nine_tenths_of_c_running_and_not_at_it():
    """C = 10: 9.0 running on average is not queued (``<=`` for ``<`` makes it so), 8.99 is, with the words."""
    assert QUEUED_ACTIVE_FRACTION == 0.9
    assert queued_reason(fig(avg_active=9.0), 10, CAPACITY) == ""
    assert queued_reason(fig(avg_active=8.99), 10, CAPACITY) == "up to 0 waiting, 8.99 of 10 running on average"
    assert judge_decode(fig(avg_active=9.0), 10, CAPACITY) == Verdict(st.VALID, "", ("no_loop", "all_requests_running"))
    assert judge_decode(fig(avg_active=8.99), 10, CAPACITY) == Verdict(
        st.QUEUED, "up to 0 waiting, 8.99 of 10 running on average", ("no_loop",))


def test_one_waiting_request_or_one_preemption_is_enough_to_be_queued_and_each_is_named():
    assert queued_reason(fig(max_waiting=1), 10, CAPACITY) == "up to 1 waiting, 10.00 of 10 running on average"
    assert queued_reason(fig(preemptions=1), 10, CAPACITY) == (
        "KV cache preemption (1 preemptions in the window); up to 0 waiting, 10.00 of 10 running on average")
    assert queued_reason(fig(preemptions=None), 10, CAPACITY) == ""  # a count the engine did not give


def test_the_engines_request_limit_is_named_only_when_c_exceeds_it():
    """max_num_seqs = 10: at C = 10 it is no cause, at C = 11 it is (``>=`` for ``>`` names it at 10)."""
    at = queued_reason(fig(avg_active=8.0), 10, CAPACITY)
    over = queued_reason(fig(avg_active=10.0, max_waiting=1), 11, CAPACITY)
    assert at == "up to 0 waiting, 8.00 of 10 running on average"
    assert over == "max_num_seqs=10 < C=11; up to 1 waiting, 10.00 of 11 running on average"


def test_a_queued_reason_ends_with_the_observed_kv_blocks_and_the_plans_estimate():
    kv = KvUsage(peak_blocks=1500, mean_blocks=1200.4, pool_blocks=3000)
    got = queued_reason(fig(max_waiting=2, kv=kv), 10, CAPACITY, ESTIMATE)
    assert got == ("up to 2 waiting, 10.00 of 10 running on average; KV blocks in use: peak 1,500 of 3,000 (50%), "
                   "mean 1,200; estimate 1,234 blocks at the steady decode footprint, "
                   "5,678 if all C held their peak at once")
    # A record made before the peak was counted quotes no estimate; a cell without KV counts quotes no usage.
    assert kv_figures(fig(), dataclasses.replace(ESTIMATE, peak_blocks_needed=None)) == []
    assert kv_figures(fig(), None) == []


def test_a_window_without_a_step_is_an_error_that_says_what_to_give():
    assert judge_decode(None, 10, CAPACITY) == Verdict(
        st.ERROR, "the decode window held no engine step (a window of seconds ends before its first step that "
                  "ends past it: give a --duration longer than a step, or --window-steps)", ())


def test_a_loop_wins_over_queueing_and_a_passed_throttle_check_is_added_to_every_status():
    loop = "request 3 repeated a 4-token period 12 times"
    assert judge_decode(fig(max_waiting=3), 10, CAPACITY, looped=loop) == Verdict(st.LOOPED, loop, ())
    assert judge_decode(fig(), 10, CAPACITY, looped=loop, throttle_passed=True) == Verdict(
        st.LOOPED, loop, ("not_throttled",))
    assert judge_decode(fig(), 10, CAPACITY, throttle_passed=True).checks_passed == (
        "no_loop", "all_requests_running", "not_throttled")
    assert judge_decode(fig(max_waiting=1), 10, CAPACITY, throttle_passed=True).checks_passed == (
        "no_loop", "not_throttled")
    # Not judged (None) or throttled (False): the check is not among those passed.
    for passed in (None, False):
        assert judge_decode(fig(), 10, CAPACITY, throttle_passed=passed).checks_passed == (
            "no_loop", "all_requests_running")


@pytest.mark.parametrize("estimate", [None, ESTIMATE])
def test_judge_decode_quotes_the_estimate_it_is_given(estimate):
    got = judge_decode(fig(max_waiting=1), 10, CAPACITY, estimate=estimate)
    assert ("estimate 1,234 blocks" in got.reason) is (estimate is not None)
