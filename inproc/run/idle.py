"""Leaving the engine idle: draining what it holds, stopping at a step boundary on request."""
from __future__ import annotations

from inproc.engines.base import Engine
from inproc.run.interrupt import RunInterrupted


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
