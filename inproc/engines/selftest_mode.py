"""How ``inproc selftest`` steps an engine: one :class:`SelftestMode` per stepping mode an adapter offers."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, ContextManager

from inproc.types import EngineInfo, LaunchSpec


@dataclass(frozen=True)
class SelftestMode:
    """One way the adapter steps the engine, as ``inproc selftest`` builds and checks it.

    ``returned_lag``: how many steps after forming a batch its outputs come back, read from
    the built engine's settings (0 sync; 1 under vLLM's async scheduling or SGLang's overlap
    loop): an engine may refuse a mode asked for (vLLM 0.32 keeps n-gram drafts synchronous on
    a GPU). ``build_context``: entered
    around the build (to force what this machine's platform would turn off). ``speculative``:
    the engine drafts tokens, so its draft counters must move. The ``main`` mode also carries
    the profiler, the forced preemption and the capacity checks.
    """

    name: str
    launch: LaunchSpec
    returned_lag: Callable[[EngineInfo], int] = lambda info: 0
    speculative: bool = False
    main: bool = False
    build_context: Callable[[], ContextManager] = field(default=contextlib.nullcontext)
