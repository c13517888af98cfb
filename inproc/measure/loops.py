"""Repetition detector on the output token ids of a cell's requests.

A request loops when its output turned into the same tokens over and over. Two tests,
both on token ids only (no tokenizer needed):

* tail period: the output *ends* with a pattern of period p (1..``max_period``) that
  covers at least ``max(min_span_tokens, min_repeats * p)`` tokens. The span is how far
  back ``token[i] == token[i - p]`` holds from the last token, plus p, so a loop cut
  mid-pattern by max_tokens or the window's end still counts.
* n-gram ratio: in the last ``ngram_tail_tokens`` tokens, the share of n-grams that
  already occurred earlier in that tail. It catches what the first test cannot: periods
  longer than ``max_period`` and loops with an occasional different token.

Why it matters: repeated text makes speculative decoding's drafts trivially right, so a
looped cell's tok/s and acceptance say nothing about the model (the Looped status).

Why these defaults: a random stream matches ``token[i] == token[i - p]`` with probability
1/V per position, so a run of ``s`` matches has probability V**-s. Small vocabularies make
short accidental repeats common (three equal tokens in a row at V = 100 is 1 in 10**4),
so the test requires a minimum span in tokens, not just a repeat count: 32 tokens at
V = 100 is 10**-62 per period. A 4-gram repeat in a 512-token random tail at V = 100 is
expected ~0.001 times; a real loop of period p in that tail repeats a share 1 - p/512 of
its 4-grams, far above 0.6.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from inproc.errors import UsageError
from inproc.measure.trace import RequestTrace

# Requests named in a Looped reason; the rest are counted ("and 5 more").
MAX_NAMED_REQUESTS = 5

# Odd 64-bit multiplier of the n-gram hash (a golden-ratio constant); arithmetic wraps
# modulo 2**64, and a false collision only adds one repeat in ~2**64 / tail**2.
_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class LoopSettings:
    """Thresholds of the loop detector (see the module docstring for why these values)."""

    enabled: bool = True  # False: never report a loop (e.g. to study a model that repeats)
    max_period: int = 64  # longest tail pattern tested, in tokens
    min_repeats: int = 3  # the tail pattern must repeat at least this many times ...
    min_span_tokens: int = 32  # ... and cover at least this many tokens
    ngram_n: int = 4  # n of the n-gram ratio
    ngram_tail_tokens: int = 512  # the ratio is taken over this many last tokens
    ngram_min_tokens: int = 128  # shorter outputs are not judged by the ratio
    max_ngram_ratio: float = 0.6  # a higher share of repeated n-grams is a loop

    def __post_init__(self) -> None:
        for name in ("max_period", "min_repeats", "min_span_tokens", "ngram_n", "ngram_tail_tokens", "ngram_min_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise UsageError(f"Bad loop setting {name}={value!r}: it must be a whole number of 1 or more.")
        if not 0.0 < self.max_ngram_ratio <= 1.0:
            raise UsageError(f"Bad loop setting max_ngram_ratio={self.max_ngram_ratio!r}: it must be in (0, 1].")

    def tail_span_needed(self, period: int) -> int:
        """Tokens a tail pattern of this period must cover to count as a loop."""
        return max(self.min_span_tokens, self.min_repeats * period)


@dataclass(frozen=True)
class LoopFinding:
    """One request's loop: what repeats, how often, and where it starts."""

    kind: Literal["tail_period", "ngram_ratio"]
    period: int  # tokens per repeat (for ngram_ratio: the most common repeat distance)
    repeats: int  # whole repeats covered
    start: int  # index of the first token of the repeated stretch
    ngram_ratio: float | None = None  # share of repeated n-grams in the tail (ngram_ratio only)
    ngram_n: int = 0

    def describe(self) -> str:
        """Short text, e.g. ``period 4 ×37`` or ``72% repeated 4-grams, period ~113 ×3``."""
        if self.kind == "tail_period":
            return f"period {self.period} ×{self.repeats}"
        return f"{self.ngram_ratio:.0%} repeated {self.ngram_n}-grams, period ~{self.period} ×{self.repeats}"


def detect_loop(token_ids: Sequence[int] | np.ndarray, settings: LoopSettings = LoopSettings()) -> LoopFinding | None:
    """The loop in one request's output, or None (always None when ``settings.enabled`` is False)."""
    if not settings.enabled:
        return None
    x = np.asarray(token_ids, dtype=np.int64)
    return _tail_period(x, settings) or _ngram_ratio(x, settings)


def judge_cell_loops(requests: list[RequestTrace], settings: LoopSettings = LoopSettings()) -> str:
    """"" when no request looped, else the Looped reason naming requests, period and repeats."""
    if not settings.enabled:
        return ""
    found = [(r.request_id, f) for r in requests if (f := detect_loop(r.token_ids, settings)) is not None]
    if not found:
        return ""
    named = ", ".join(f"{rid} {f.describe()}" for rid, f in found[:MAX_NAMED_REQUESTS])
    more = f", and {len(found) - MAX_NAMED_REQUESTS} more" if len(found) > MAX_NAMED_REQUESTS else ""
    return f"{len(found)} of {len(requests)} requests looped: {named}{more}"


def _tail_period(x: np.ndarray, s: LoopSettings) -> LoopFinding | None:
    """The shortest period whose pattern covers the required span at the end of ``x``."""
    n = x.size
    max_period = min(s.max_period, n - 1)
    if max_period < 1 or n < s.min_span_tokens:
        return None
    # Deciding needs at most the largest required span, so only that tail is compared.
    tail = x[-min(n, s.tail_span_needed(max_period)) :]
    runs = _trailing_runs(tail, max_period)
    periods = np.arange(1, max_period + 1)
    needed = np.maximum(s.min_span_tokens, s.min_repeats * periods)
    hits = np.flatnonzero(runs + periods >= needed)
    if hits.size == 0:
        return None
    p = int(periods[hits[0]])
    span = _trailing_run(x, p) + p  # the whole stretch, for the report
    return LoopFinding("tail_period", p, span // p, n - span)


def _trailing_runs(x: np.ndarray, max_period: int) -> np.ndarray:
    """For p = 1..max_period: how many last tokens equal the token p positions before them."""
    n = x.size
    rev = x[::-1]
    # Distinct negative sentinels after the start of the stream: every row ends in a
    # mismatch (token ids are >= 0), so argmin always finds the end of the run.
    padded = np.concatenate([rev, -1 - np.arange(max_period, dtype=np.int64)])
    shifted = sliding_window_view(padded[1:], n)[:max_period]  # row k: rev shifted by k + 1
    return (shifted == rev[None, :]).argmin(axis=1)


def _trailing_run(x: np.ndarray, p: int) -> int:
    same = x[p:] == x[:-p]
    misses = np.flatnonzero(~same[::-1])
    return int(misses[0]) if misses.size else int(same.size)


def _ngram_ratio(x: np.ndarray, s: LoopSettings) -> LoopFinding | None:
    """Share of n-grams in the tail that repeat an earlier one; the loop if above the limit."""
    tail = x[-s.ngram_tail_tokens :]
    if tail.size < max(s.ngram_min_tokens, s.ngram_n + 1):
        return None
    grams = sliding_window_view(tail.astype(np.uint64), s.ngram_n)
    powers = _HASH_MULT ** np.arange(s.ngram_n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = (grams * powers).sum(axis=1, dtype=np.uint64)
    order = np.argsort(h, kind="stable")  # equal hashes stay in position order
    repeat = h[order][1:] == h[order][:-1]
    ratio = float(repeat.sum()) / h.size
    if ratio <= s.max_ngram_ratio:
        return None
    later, earlier = order[1:][repeat], order[:-1][repeat]
    period = int(np.bincount(later - earlier).argmax())  # the most common distance back
    first = int(earlier.min())
    offset = x.size - tail.size
    return LoopFinding("ngram_ratio", period, (tail.size - first) // period, offset + first, ratio, s.ngram_n)
