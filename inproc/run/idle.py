"""A measurement's requests at the engine's edge: a step's deltas filed under their requests,
and the engine left idle (drained; stopped at a step boundary on request)."""
from __future__ import annotations

from inproc.engines.base import Engine
from inproc.measure.trace import RequestTrace
from inproc.run.interrupt import RunInterrupted
from inproc.types import RequestDelta


class EngineNotIdle(RuntimeError):
    """The engine still had requests when a measurement needed it empty."""


def drain(engine: Engine, max_steps: int = 1_000_000) -> None:
    """Step until the engine holds no request (aborted ones leave at the next step)."""
    for _ in range(max_steps):
        if not engine.has_unfinished():
            return
        engine.step()
    raise EngineNotIdle("engine still has requests after draining")


def stop(engine: Engine, in_flight: list[str]) -> None:
    """Leave the engine idle and abandon the measurement in progress (Ctrl-C at a step boundary)."""
    engine.abort(in_flight)
    drain(engine)
    raise RunInterrupted("stopped at a step boundary on request")


def file_delta(req: RequestTrace, d: RequestDelta, step_index: int) -> bool:
    """File a step's delta under its request; True when the request finished."""
    if d.new_token_ids:
        req.token_steps.append(step_index)
        req.token_counts.append(len(d.new_token_ids))
        req.token_ids.extend(d.new_token_ids)
    if d.num_cached_tokens is not None and req.num_cached_tokens is None:
        req.num_cached_tokens = d.num_cached_tokens
    if d.finished:
        req.finished_step, req.finish_reason = step_index, d.finish_reason
    return d.finished
