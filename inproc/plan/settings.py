"""What the speed-test matrix measures: the settings a profile's ``[matrix]`` table and
``inproc run``'s flags fill. Plain Python; every field is checked when it is set."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from inproc.errors import UsageError

PROMPT_MODES = ("shared", "distinct")
ANATOMY_CHOICES = ("on", "off")  # one spelling for --anatomy and the profile's [matrix] anatomy
MAX_SECONDS = 24 * 3600.0  # a window or budget longer than a day is a typo, not a plan
MAX_TEMPERATURE = 100.0


def _number(what: str, value: object, low: float, high: float, unit: str, open_low: bool = False) -> None:
    """A finite number in range, or a one-line error naming it (NaN and infinity never pass)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and (value > low if open_low else value >= low) and value <= high
    if not ok:
        bound = f"above {low:g}" if open_low else f"{low:g} or more"
        raise UsageError(f"Bad {what} {value!r}{' ' + unit if unit else ''}: it must be a finite number {bound} "
                         f"and at most {high:g}.")


def _whole(what: str, value: object, low: int, unit: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UsageError(f"Bad {what} {value!r}: it must be a whole number of at least {low} {unit}{'s' if low != 1 else ''}.")


@dataclass(frozen=True)
class MatrixSettings:
    """What the speed-test matrix measures; every field is also a CLI flag of ``inproc run``."""

    contexts: tuple[int, ...] = (8192, 16384, 32768, 65536, 131072, 262144, 524288, 1043456)
    concurrency: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    window_s: float = 30.0
    max_output: int = 4096
    prompt_mode: Literal["shared", "distinct"] = "shared"
    prefill_contexts: tuple[int, ...] | None = None  # None: the decode contexts
    prefill_samples: int = 2
    prefill_budget_s: float = 60.0
    temperature: float = 1.0
    suffix_tokens: int = 32  # unique tokens after the shared context (shared mode)
    window_steps: int | None = None  # a decode window of exactly this many engine steps instead of window_s
    # Decode cells as (context, concurrency) pairs instead of the whole contexts x concurrency
    # grid; None: the grid. When set, contexts and concurrency become the cells' own.
    cells: tuple[tuple[int, int], ...] | None = None
    # The engines' per-step accounting behind the step anatomy (vLLM's stats flags, the
    # adapters' batch shapes and forward costs); False builds the engine without it. Spelled
    # "on" / "off" on the command line and in a profile.
    anatomy: bool = True
    # The kernel pass after each decode window (inproc.run.kernelpass), spelled "on" / "off" like
    # anatomy; None: the command's default (inproc cell: on; inproc run and sweep: off).
    kernels: bool | None = None
    kernel_steps: int = 16  # engine steps the kernel pass profiles

    @property
    def kernel_pass_steps(self) -> int:
        """Steps of each decode cell's kernel pass (0: no pass)."""
        return self.kernel_steps if self.kernels else 0

    def __post_init__(self) -> None:
        if self.cells is not None:
            self._take_cells()
        if self.prompt_mode not in PROMPT_MODES:
            raise UsageError(
                f"Unknown prompt mode {self.prompt_mode!r}. Known modes: {', '.join(PROMPT_MODES)}."
            )
        _number("window", self.window_s, 0.0, MAX_SECONDS, "s", open_low=True)
        _number("prefill budget", self.prefill_budget_s, 0.0, MAX_SECONDS, "s", open_low=True)
        _number("temperature", self.temperature, 0.0, MAX_TEMPERATURE, "")
        _whole("max output", self.max_output, 1, "token")
        _whole("prefill samples", self.prefill_samples, 1, "sample")
        _whole("suffix tokens", self.suffix_tokens, 1, "token")
        if not isinstance(self.anatomy, bool):
            raise UsageError(f"Bad anatomy {self.anatomy!r}: it must be a bool (True for on, False for off).")
        if self.kernels is not None and not isinstance(self.kernels, bool):
            raise UsageError(f"Bad kernels {self.kernels!r}: it must be a bool (True for on, False for off).")
        _whole("kernel steps", self.kernel_steps, 1, "step")
        if self.window_steps is not None:
            _whole("window steps", self.window_steps, 1, "step")
        if not self.contexts:
            raise UsageError("Empty context list. Give at least one context, e.g. 8K,16K.")
        if not self.concurrency:
            raise UsageError("Empty concurrency list. Give at least one level, e.g. 1,2,4.")
        for c in self.concurrency:
            _whole("concurrency", c, 1, "request")
        for c in self.contexts + (self.prefill_contexts or ()):
            _whole("context", c, 1, "token")

    def _take_cells(self) -> None:
        """A cell list replaces the grid: its contexts and levels, sorted (cells run in row order)."""
        cells = tuple((int(L), int(C)) for L, C in self.cells)  # a loaded file holds lists
        if not cells:
            raise UsageError("Empty cell list. Give CONTEXTxCONCURRENCY cells, e.g. 8Kx1,8Kx16.")
        object.__setattr__(self, "cells", cells)  # frozen: derived fields are set once, here
        object.__setattr__(self, "contexts", tuple(sorted({L for L, _ in cells})))
        object.__setattr__(self, "concurrency", tuple(sorted({C for _, C in cells})))

    def runs_cell(self, context: int, concurrency: int) -> bool:
        """Whether the plan holds this decode cell (every grid cell when no cell list is given)."""
        return self.cells is None or (context, concurrency) in self.cells

    @property
    def prefill_list(self) -> tuple[int, ...]:
        return self.prefill_contexts if self.prefill_contexts is not None else self.contexts
