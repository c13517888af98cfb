"""What capturing the graphs cost at build, from the record: device memory and wall time, per size an estimate.

The record holds the totals the build measured (``EngineSettings.graph_capture_memory_bytes``:
the engine's own figure, vLLM's ``capture_model()`` return value or SGLang's
``graph_memory_usage``; ``graph_capture_s``: the wall time of vLLM's ``capture_model()`` call)
and the whole build's time (``EngineRecord.build_s``). Nothing records a size's own share, so a
size's cost is an estimate: the total ÷ the sizes captured, an even split. Graphs share one
memory pool and a larger graph holds more activations, so the largest sizes weigh more than
the split says; the sweep measures a list's real cost.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc.record.schema import RunRecord

NONE_RECORDED = ("none recorded: the build captured no CUDA graph (a CPU build, eager mode or graphs off) "
                 "or its engine does not report what capture took")


@dataclass(frozen=True)
class CaptureCost:
    """The capture totals one run's build recorded (None: not recorded) and the sizes they cover."""

    sizes: int  # sizes captured
    memory_bytes: int | None
    seconds: float | None
    build_s: float | None  # the whole engine build, wall seconds

    @property
    def recorded(self) -> bool:
        return self.sizes > 0 and (self.memory_bytes is not None or self.seconds is not None)

    def estimate(self, n_sizes: int) -> tuple[float | None, float | None]:
        """(bytes, seconds) ``n_sizes`` sizes would take by the even split: an estimate."""
        if not self.recorded:
            return None, None
        share = n_sizes / self.sizes
        return (self.memory_bytes * share if self.memory_bytes is not None else None,
                self.seconds * share if self.seconds is not None else None)


def capture_cost(rec: RunRecord, captured: tuple[int, ...] | None) -> CaptureCost:
    """The run's capture totals (see the module docstring)."""
    s = rec.engine.settings
    return CaptureCost(len(captured or ()), s.graph_capture_memory_bytes, s.graph_capture_s, rec.engine.build_s)
