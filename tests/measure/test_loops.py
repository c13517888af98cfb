"""The loop detector: no false positives on random streams, every planted loop found (its speed: scripts/bench.py loops)."""
from __future__ import annotations

import numpy as np
import pytest

from inproc.errors import UsageError
from inproc.measure.loops import LoopFinding, LoopSettings, detect_loop, judge_cell_loops
from inproc.measure.trace import RequestTrace

DEFAULT = LoopSettings()


def _request(rid: str, tokens) -> RequestTrace:
    return RequestTrace(rid, prompt_tokens=16, max_tokens=4096, submit_s=0.0, initial=True, token_ids=list(map(int, tokens)))


def _random_streams(count: int = 2000):
    for seed in range(count):
        rng = np.random.default_rng(seed)
        length, vocab = int(rng.integers(64, 4097)), int(rng.integers(100, 32001))
        yield seed, rng.integers(0, vocab, length)


def _planted(rng: np.random.Generator, vocab: int, period: int, prefix: int, cut: int = 0) -> tuple[np.ndarray, int]:
    """A random prefix, then a loop of distinct tokens covering the documented minimum span."""
    pattern = rng.choice(vocab, period, replace=False)  # distinct: the loop's period is exactly p
    repeats = -(-DEFAULT.tail_span_needed(period) // period)
    loop = np.tile(pattern, repeats + (1 if cut else 0))
    loop = loop[: loop.size - cut] if cut else loop
    return np.concatenate([rng.integers(0, vocab, prefix), loop]), repeats


def test_no_false_positive_on_random_streams():
    found = [(seed, f) for seed, tokens in _random_streams() if (f := detect_loop(tokens, DEFAULT)) is not None]
    assert found == []


def test_a_repeat_count_without_a_minimum_span_has_false_positives():
    """Why min_span_tokens exists: on the same streams, "2 repeats" alone fires by chance."""
    naive = LoopSettings(min_repeats=2, min_span_tokens=1)
    assert sum(detect_loop(tokens, naive) is not None for _, tokens in _random_streams()) > 0


@pytest.mark.parametrize("period", range(1, 65))
def test_every_planted_loop_is_found(period):
    for seed in range(5):
        rng = np.random.default_rng(1000 * period + seed)
        vocab = int(rng.integers(100, 32001))
        prefix = int(rng.integers(0, 500))
        tokens, repeats = _planted(rng, vocab, period, prefix)
        f = detect_loop(tokens, DEFAULT)
        assert f is not None, (period, seed, vocab, prefix)
        assert (f.kind, f.period) == ("tail_period", period)
        assert f.repeats >= repeats and f.start <= prefix  # a prefix that happens to match extends it


@pytest.mark.parametrize("period", [1, 3, 7, 64])
def test_loop_cut_mid_pattern_is_found(period):
    rng = np.random.default_rng(period)
    tokens, _ = _planted(rng, 1000, period, 200, cut=max(1, period // 2) if period > 1 else 0)
    f = detect_loop(tokens, DEFAULT)
    assert f is not None and f.period == period


def test_too_short_a_repeat_is_not_a_loop():
    rng = np.random.default_rng(3)
    span = DEFAULT.min_span_tokens - 1  # one token short of the minimum span
    tokens = np.concatenate([rng.integers(1000, 2000, 300), np.full(span, 7)])
    assert detect_loop(tokens, DEFAULT) is None
    assert detect_loop(np.concatenate([tokens, [7]]), DEFAULT) is not None


def test_long_period_with_noise_is_found_by_the_ngram_ratio():
    rng = np.random.default_rng(5)
    pattern = rng.integers(0, 32000, 150)  # beyond max_period: the tail test cannot see it
    tokens = np.concatenate([rng.integers(0, 32000, 100), np.tile(pattern, 5)])
    tokens[-40] += 1  # one different token breaks the exact tail pattern too
    f = detect_loop(tokens, DEFAULT)
    assert f is not None and f.kind == "ngram_ratio"
    assert f.period == 150 and f.ngram_ratio > DEFAULT.max_ngram_ratio
    assert "repeated 4-grams, period ~150" in f.describe()


def test_off_switch():
    tokens = np.full(500, 9)
    assert detect_loop(tokens, DEFAULT) is not None
    assert detect_loop(tokens, LoopSettings(enabled=False)) is None
    assert judge_cell_loops([_request("r-1", tokens)], LoopSettings(enabled=False)) == ""


def test_describe():
    assert LoopFinding("tail_period", 4, 37, 100).describe() == "period 4 ×37"


def test_cell_reason_names_requests_period_and_repeats():
    rng = np.random.default_rng(8)
    reqs = [_request(f"r-{i}", rng.integers(0, 32000, 300)) for i in range(8)]
    reqs[2] = _request("r-12", np.concatenate([rng.integers(0, 32000, 50), np.tile([5, 6, 7, 8], 37)]))
    reqs[5] = _request("r-3", np.concatenate([rng.integers(0, 32000, 50), np.full(60, 11)]))
    assert judge_cell_loops(reqs, DEFAULT) == "2 of 8 requests looped: r-12 period 4 ×37, r-3 period 1 ×60"
    assert judge_cell_loops(reqs[:2], DEFAULT) == ""


def test_cell_reason_lists_at_most_five_requests():
    reqs = [_request(f"r-{i}", np.full(40, i)) for i in range(7)]
    reason = judge_cell_loops(reqs, DEFAULT)
    assert reason.startswith("7 of 7 requests looped: r-0 period 1 ×40,") and reason.endswith(", and 2 more")


def test_empty_and_tiny_outputs():
    assert detect_loop([], DEFAULT) is None
    assert detect_loop([1], DEFAULT) is None
    assert judge_cell_loops([_request("r-0", [])], DEFAULT) == ""


def test_a_full_cell_finds_its_one_loop():
    # Its cost is the benchmark's (scripts/bench.py loops, the same cell, target < 0.5 s), not a test's.
    rng = np.random.default_rng(1)
    reqs = [_request(f"r-{i}", rng.integers(0, 32000, 4096)) for i in range(128)]
    reqs[7] = _request("r-7", np.concatenate([rng.integers(0, 32000, 96), np.tile(rng.integers(0, 32000, 40), 100)]))
    assert judge_cell_loops(reqs, DEFAULT) == "1 of 128 requests looped: r-7 period 40 ×100"


@pytest.mark.parametrize("field, value", [("max_period", 0), ("min_span_tokens", -1), ("max_ngram_ratio", 1.5)])
def test_bad_settings_are_one_line_errors(field, value):
    with pytest.raises(UsageError, match=f"Bad loop setting {field}="):
        LoopSettings(**{field: value})
