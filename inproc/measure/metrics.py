"""Every figure of the matrix, each defined once, computed from a cell's raw records.

Clock: ``time.perf_counter()`` seconds relative to the cell start. A token's time is the
end of the engine step that returned it (``StepTrace.t_end_s[step]``).

The decode window: it opens at the end of the step at ``CellTrace.window_open_s`` (the
first step after which all C initial requests had their first token, see the driver)
and covers every step that *ends* in ``(open, open + W]`` (a step window,
``--window-steps N``: the N steps after it opens). It closes at the end of the last such
step, so ``measured_for_s <= W`` and the tokens counted are exactly those of the steps
inside. Warm-up (prefill of the first C requests) is before the window; steps a profiler
covered come after it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.measure.trace import CellTrace, RequestTrace

@dataclass(frozen=True)
class Window:
    """The decode window: steps ``first_step..last_step`` (inclusive), ``open_s`` to ``close_s``."""

    open_s: float
    close_s: float
    first_step: int
    last_step: int

    @property
    def length_s(self) -> float:
        return self.close_s - self.open_s


def window(trace: CellTrace) -> Window | None:
    """Steps ending in ``(open, open + W]``, or the N steps after open for a step window;
    None when the window never opened or holds no step."""
    if trace.window_open_s is None:
        return None
    ends = trace.steps.t_end_s
    after = np.flatnonzero(ends > trace.window_open_s)
    if trace.window_steps:
        inside = after[: trace.window_steps]
    else:
        inside = after[ends[after] <= trace.window_open_s + trace.window_target_s]
    if inside.size == 0:
        return None
    return Window(trace.window_open_s, float(ends[inside[-1]]), int(inside[0]), int(inside[-1]))


def anatomy_window(trace: CellTrace, w: Window) -> Window:
    """The steps the step anatomy is read from: the anatomy's own pass after the window
    (``CellTrace.anatomy_pass``, from the start of its first step to the end of its last),
    or the window ``w`` itself in a record without a pass (its accounting ran in the window)."""
    span = trace.anatomy_pass
    if span is None or span.last_step < span.first_step:
        return w
    steps = trace.steps
    return Window(float(steps.t_start_s[span.first_step]), float(steps.t_end_s[span.last_step]),
                  span.first_step, span.last_step)


def _counts_in_window(trace: CellTrace, req: RequestTrace, w: Window) -> tuple[np.ndarray, np.ndarray]:
    steps = np.asarray(req.token_steps, dtype=np.int64)
    keep = (steps >= w.first_step) & (steps <= w.last_step)
    return steps[keep], np.asarray(req.token_counts, dtype=np.int64)[keep]


def _window_arrivals(trace: CellTrace, w: Window):
    """Per request with at least two arrivals in the window: (arrival times, tokens per arrival)."""
    for r in trace.requests:
        steps, counts = _counts_in_window(trace, r, w)
        if len(steps) >= 2:
            yield trace.steps.t_end_s[steps], counts


def output_tokens(trace: CellTrace, w: Window) -> int:
    """Output tokens of all requests returned by steps inside the window."""
    return int(sum(_counts_in_window(trace, r, w)[1].sum() for r in trace.requests))


def arrivals(trace: CellTrace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every request's arrivals, one request after another: (step, tokens, the request's index), int64."""
    steps = [np.asarray(r.token_steps, dtype=np.int64) for r in trace.requests]
    counts = [np.asarray(r.token_counts, dtype=np.int64) for r in trace.requests]
    index = np.repeat(np.arange(len(steps)), [s.size for s in steps])
    empty = [np.empty(0, dtype=np.int64)]
    return np.concatenate(steps or empty), np.concatenate(counts or empty), index


def output_tokens_each(trace: CellTrace, windows: list[Window]) -> np.ndarray:
    """:func:`output_tokens` of each of ``windows``, from one pass over the requests (int64)."""
    steps, counts, _ = arrivals(trace)
    per_step = np.bincount(steps, weights=counts, minlength=len(trace.steps.t_end_s)).astype(np.int64)
    before = np.concatenate([[0], np.cumsum(per_step)])  # tokens returned by the steps before each step
    return np.array([before[w.last_step + 1] - before[w.first_step] for w in windows], dtype=np.int64)


def measured_for_s(w: Window) -> float:
    """Window length: from the step end that opened it to the end of the last step inside it."""
    return w.length_s


def total_tok_s(trace: CellTrace, w: Window) -> float:
    """Output tokens inside the window divided by :func:`measured_for_s`."""
    return output_tokens(trace, w) / w.length_s if w.length_s > 0 else 0.0


def tok_s_per_gpu(total: float, gpus: int) -> float:
    """:func:`total_tok_s` (output tokens inside the window ÷ :func:`measured_for_s`) divided by
    the GPUs the engine ran on: its ranks, one GPU each (on a CPU run, its worker processes)."""
    return total / max(int(gpus), 1)


def subwindows(trace: CellTrace, w: Window, sub_s: float | None = None, every_steps: int | None = None) -> list[Window]:
    """The window cut into consecutive sub-windows, by time (``sub_s`` seconds) or by ``every_steps`` steps.

    By time, a step of the window belongs to sub-window k = ceil((its end − window open) ÷
    ``sub_s``); by steps, the window's first ``every_steps`` steps form the first sub-window,
    the next ``every_steps`` the second, and so on.
    Each sub-window that holds a step runs from the end of the previous one's last step (the
    window open for the first) to the end of its own last step, so the sub-windows tile the
    window exactly: their :func:`output_tokens` add up to the window's and their lengths to
    :func:`measured_for_s`. A last sub-window shorter than half a sub-window (under
    ``sub_s`` ÷ 2 seconds, or under ``every_steps`` ÷ 2 steps) joins the one before it.
    """
    by_time = sub_s is not None and sub_s > 0 and every_steps is None
    if not by_time and not (sub_s is None and every_steps is not None and every_steps >= 1):
        raise ValueError(f"give sub_s > 0 or every_steps >= 1, not sub_s={sub_s!r}, every_steps={every_steps!r}")
    ends = trace.steps.t_end_s[w.first_step : w.last_step + 1]
    group = np.ceil((ends - w.open_s) / sub_s) if by_time else np.arange(ends.size) // every_steps
    last = np.append(np.flatnonzero(np.diff(group)), ends.size - 1)  # index of each sub-window's last step
    if last.size > 1:
        prev = last[-2]
        short = (ends[-1] - ends[prev] < sub_s / 2) if by_time else (last[-1] - prev < every_steps / 2)
        if short:
            last = np.delete(last, -2)
    firsts = np.concatenate([[0], last[:-1] + 1])
    opens = np.concatenate([[w.open_s], ends[last[:-1]]])
    return [Window(float(o), float(ends[b]), w.first_step + int(a), w.first_step + int(b))
            for o, a, b in zip(opens, firsts, last)]


def per_request_tok_s(trace: CellTrace, w: Window) -> float | None:
    """Mean over requests of one request's decode rate inside the window.

    A request's rate is (tokens it got in the window after its first arrival there) ÷
    (time from that first arrival to its last arrival in the window). Requests with fewer
    than two arrivals in the window are left out. Gaps while a finished request's slot
    is refilled are not counted, which is why this can exceed total ÷ C.
    """
    rates = [counts[1:].sum() / (t[-1] - t[0]) for t, counts in _window_arrivals(trace, w) if t[-1] > t[0]]
    return float(np.mean(rates)) if rates else None


def ttft_s(trace: CellTrace, req: RequestTrace) -> float | None:
    """Submit (just before the request is handed to ``add_request``) to the end of the step that returned its first token.

    Submit is stamped at that same point on every engine, so the engine's own intake of
    the prompt is inside TTFT wherever the engine does it: vLLM inside ``add_request``
    (input processing, block hashing), SGLang inside its next ``step()``. Files written
    before this rule stamped it after ``add_request`` returned, which left vLLM's intake out.
    """
    if len(req.token_steps) == 0:
        return None
    return float(trace.steps.t_end_s[req.token_steps[0]] - req.submit_s)


def ttft_ms_median(trace: CellTrace) -> float | None:
    """Median :func:`ttft_s` (in ms) over every request of the cell that got a first token."""
    vals = [v for v in (ttft_s(trace, r) for r in trace.requests) if v is not None]
    return float(np.median(vals) * 1000) if vals else None


def tbt_intervals_s(trace: CellTrace, w: Window) -> np.ndarray:
    """Per-token gaps inside the window: an arrival of k tokens after a gap g gives k gaps of g/k.

    A gap runs from a request's previous arrival to this one; both must be inside the
    window. Speculative decoding returns several tokens per step, hence the split.
    """
    out = [np.repeat(np.diff(t) / counts[1:], counts[1:]) for t, counts in _window_arrivals(trace, w)]
    return np.concatenate(out) if out else np.empty(0)


def tbt_ms_median(trace: CellTrace, w: Window) -> float | None:
    """Median of :func:`tbt_intervals_s`, in ms."""
    gaps = tbt_intervals_s(trace, w)
    return float(np.median(gaps) * 1000) if gaps.size else None


def avg_active(trace: CellTrace, w: Window) -> float:
    """Time-weighted mean of the scheduler's running count over the window.

    Step i's count (sampled when its batch was formed) holds from the previous step's
    end to step i's end, so the weights tile the window exactly.
    """
    s = trace.steps
    idx = np.arange(w.first_step, w.last_step + 1)
    prev_end = np.where(idx > 0, s.t_end_s[np.maximum(idx - 1, 0)], s.t_start_s[idx])
    prev_end = np.maximum(prev_end, w.open_s)
    dt = s.t_end_s[idx] - prev_end
    return float((s.num_running[idx] * dt).sum() / dt.sum()) if dt.sum() > 0 else 0.0


def max_waiting(trace: CellTrace, w: Window) -> int:
    """Largest waiting-queue length the scheduler had at any step in the window."""
    return int(trace.steps.num_waiting[w.first_step : w.last_step + 1].max())


def completed_requests(trace: CellTrace, w: Window) -> int:
    """Requests whose finishing step is inside the window (aborts at the end not counted)."""
    return sum(
        1
        for r in trace.requests
        if r.finished_step is not None and r.finish_reason not in (None, "abort") and w.first_step <= r.finished_step <= w.last_step
    )


def harness_overhead(trace: CellTrace, w: Window) -> float:
    """Fraction of the window spent outside ``Engine.step()`` (the tool's own bookkeeping)."""
    s = trace.steps
    idx = np.arange(w.first_step, w.last_step + 1)
    inside = (s.t_end_s[idx] - np.maximum(s.t_start_s[idx], w.open_s)).sum()
    return float(1 - inside / w.length_s) if w.length_s > 0 else 0.0


def counter_delta(trace: CellTrace, name: str) -> int | None:
    """Difference of an engine counter (an ``EngineCounters`` field) between window open and window close."""
    start, end = getattr(trace.counters_start, name, None), getattr(trace.counters_end, name, None)
    return None if start is None or end is None else int(end - start)


def spec_acceptance_rate(trace: CellTrace) -> float | None:
    """Accepted ÷ proposed draft tokens over the window (engine counter differences)."""
    drafted, accepted = counter_delta(trace, "spec_draft_tokens"), counter_delta(trace, "spec_accepted_tokens")
    return accepted / drafted if drafted else None


def spec_mean_acceptance_length(trace: CellTrace) -> float | None:
    """1 + accepted draft tokens per draft over the window (tokens a verify step yields)."""
    drafts, accepted = counter_delta(trace, "spec_drafts"), counter_delta(trace, "spec_accepted_tokens")
    return 1 + accepted / drafts if drafts else None


# -- cold prefill ------------------------------------------------------------
def prefill_ttft_s(trace: CellTrace) -> float | None:
    """TTFT of the single cold request of a prefill sample (see :func:`ttft_s`)."""
    return ttft_s(trace, trace.requests[0])


def prompt_tok_s(trace: CellTrace) -> float | None:
    """Prompt tokens ÷ :func:`prefill_ttft_s` of a cold prefill sample."""
    t = prefill_ttft_s(trace)
    return trace.requests[0].prompt_tokens / t if t else None


# -- the whole run -----------------------------------------------------------
def wall_per_window(measure_s: float, windows_s) -> float | None:
    """The run's measuring wall time ÷ Σ over its decode cells of :func:`measured_for_s`.

    Measuring wall time runs from the first entry's start to the last entry's end, summed
    over the sessions that wrote the results file (a resumed run adds its own), engine
    build and warm-up excluded. 1.0 would mean the run did nothing but decode windows.
    """
    total = float(sum(windows_s))
    return measure_s / total if total > 0 and measure_s > 0 else None


def prefill_span(samples) -> tuple[float, float]:
    """Absolute ``perf_counter`` seconds from the first sample's submit to the last sample's first token."""
    first, last = samples[0], samples[-1]
    t_open = first.clock_origin_s + first.requests[0].submit_s
    t_close = last.clock_origin_s + last.requests[0].submit_s + (prefill_ttft_s(last) or 0.0)
    return t_open, t_close


def prefill_steps(trace: CellTrace) -> int:
    """Engine steps from submit to the one that formed the batch of the first token (chunked prefill takes several).

    Where outputs come back a step after their batch (vLLM's async scheduling, SGLang's
    overlap loop), the step that returned the first token is not counted: it formed the next batch.
    """
    r = trace.requests[0]
    if len(r.token_steps) == 0:
        return len(trace.steps)
    formed = int(trace.steps.output_of[r.token_steps[0]])
    return (formed if formed >= 0 else int(r.token_steps[0])) + 1
