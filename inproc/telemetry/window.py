"""Telemetry around one measured entry: sampled while it runs, judged over its window.

:class:`EntrySampling` runs the sampler for one prefill entry or decode cell and keeps
the raw trace; :func:`over_window` derives the figures and the throttle check from that
trace and the entry's window, when the entry is measured and again whenever a results
file is loaded (figures are never read back from a file).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from inproc.telemetry.disturbed import Disturbance, judge
from inproc.telemetry.figures import TelemetryFigures, cell_figures
from inproc.telemetry.judge import throttle_check
from inproc.telemetry.trace import TelemetryTrace


@dataclass(frozen=True, eq=False)
class WindowTelemetry:
    """An entry's raw telemetry, with its figures and throttle check over the entry's window."""

    trace: TelemetryTrace
    figures: TelemetryFigures
    throttle_passed: bool | None  # None: not judged (no GPU telemetry)
    throttle_reason: str
    disturbance: Disturbance | None = None  # the disturbance rule's reading (None: from a file without it)

    @property
    def throttled(self) -> str:
        """The throttle check's reason when it failed, else ""."""
        return self.throttle_reason if self.throttle_passed is False else ""

    @property
    def disturbed(self) -> str:
        """The disturbance rule's cause (``disturbed: ...``) when a source crossed its threshold, else ""."""
        return self.disturbance.reason if self.disturbance is not None else ""


def over_window(trace: TelemetryTrace, t_open_s: float, t_close_s: float, output_tokens: int | None,
                step_times_s: np.ndarray | None = None, step_ends_s: np.ndarray | None = None) -> WindowTelemetry:
    """Figures over ``[t_open_s, t_close_s]`` (absolute perf_counter), the throttle check and the
    disturbance rule (``step_times_s``: the window's steps, for its stability, ending at ``step_ends_s``)."""
    figs = cell_figures(trace, t_open_s, t_close_s, output_tokens)
    passed, reason = throttle_check(figs)
    judged = bool(figs.gpus) and not reason.startswith("not judged")
    return WindowTelemetry(trace, figs, passed if judged else None, reason,
                           judge(trace, t_open_s, t_close_s, step_times_s, step_ends_s))


class Sampler(Protocol):
    """What :class:`EntrySampling` needs of ``inproc.telemetry.sampler.Telemetry``."""

    def start_cell(self) -> None: ...

    def mark(self, label: str, t_s: float | None = None) -> None: ...

    def stop_cell(self) -> TelemetryTrace: ...


class EntrySampling:
    """Wraps a sampler (``inproc.telemetry.sampler.Telemetry``): one session per prefill entry or decode cell.

    The sampler is passed in, not imported, so that deriving figures (this module's other
    half, used when loading files) never reaches NVML.
    """

    def __init__(self, telemetry: Sampler | None) -> None:
        self.telemetry = telemetry
        self.trace: TelemetryTrace | None = None

    def mark(self, label: str, t_s: float) -> None:
        """A decode window's edge (``open`` / ``close``) at ``t_s``: the GPUs' energy is read there."""
        if self.telemetry is not None:
            self.telemetry.mark(label, t_s)

    @contextmanager
    def sampling(self):
        """Sample for the duration of the block (no-op without telemetry); then ``self.trace``."""
        self.trace = None
        if self.telemetry is None:
            yield self
            return
        self.telemetry.start_cell()
        try:
            yield self
        finally:
            self.trace = self.telemetry.stop_cell()
