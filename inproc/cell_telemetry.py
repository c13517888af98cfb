"""Telemetry around one measured entry: sampled while it runs, judged over its window."""
from __future__ import annotations

from contextlib import contextmanager

from inproc.telemetry import Telemetry, cell_figures, throttle_check


class CellTelemetry:
    """Wraps a :class:`Telemetry`: one sampling session per prefill entry or decode cell."""

    def __init__(self, telemetry: Telemetry | None) -> None:
        self.telemetry = telemetry
        self.trace = None

    @contextmanager
    def sampling(self):
        """Sample for the duration of the block (no-op without telemetry)."""
        self.trace = None
        if self.telemetry is None:
            yield self
            return
        self.telemetry.start_cell()
        try:
            yield self
        finally:
            self.trace = self.telemetry.stop_cell()

    def judge(self, t_open_s: float, t_close_s: float, output_tokens: int | None) -> tuple[dict, bool | None]:
        """Figures over ``[t_open_s, t_close_s]`` (absolute perf_counter) and the throttle check.

        Returns the record for ``entry.extra["telemetry"]`` and the check's outcome:
        True / False, or None when it could not be judged (no GPU telemetry).
        """
        if self.trace is None:
            return {}, None
        figs = cell_figures(self.trace, t_open_s, t_close_s, output_tokens)
        passed, reason = throttle_check(figs)
        judged = bool(figs.gpus) and not reason.startswith("not judged")
        record = {"figures": figs.to_dict(), "throttle": {"passed": passed if judged else None, "reason": reason},
                  "trace": self.trace.to_dict()}
        return record, (passed if judged else None)
