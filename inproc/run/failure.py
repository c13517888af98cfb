"""An engine that fails before anything is measured: one line with the engine's own message, exit 2.

Building, warming up and the first measured entry run the engine on the profile's settings for
the first time; an exception there is (nearly always) a setting the engine cannot take, not a
cell's misfortune. So it ends the run in one line, naming the stage, the engine's message and the
``--set`` override that caused it where the message names it (else every override given). No
results file is begun: the writer writes nothing before the first entry. A failure after
something was measured stays that entry's Error entry (``inproc.run.runner``).
"""
from __future__ import annotations

import contextlib
import re
from typing import Iterator

from inproc.engines.base import EngineBuildError
from inproc.errors import EngineFailed, UsageError
from inproc.run.interrupt import RunInterrupted

#: What passes through unchanged: already one line, or not a failure of the engine.
PASSED = (UsageError, EngineBuildError, RunInterrupted, KeyboardInterrupt)


def engine_message(error: BaseException) -> str:
    """The engine's own message on one line, after its exception type (an ``assert`` may carry no text)."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", " ", text.lower()).strip()


def culprits(message: str, overrides: tuple[str, ...]) -> tuple[str, ...]:
    """The overrides whose key (its last dotted part) or value the engine's message names, as words."""
    said = f" {_words(message)} "
    found = []
    for item in overrides:
        key, _, value = item.partition("=")
        names = {_words(key.rsplit(".", 1)[-1]), _words(value)} - {""}
        if any(f" {n} " in said for n in names if not n.replace(".", "").isdigit()):
            found.append(item)
    return tuple(found)


def failure_line(stage: str, error: BaseException, overrides: tuple[str, ...]) -> str:
    """One line: where it failed, the engine's message, the setting behind it; nothing was measured."""
    message = engine_message(error)
    named = culprits(message, overrides)
    if named:
        cause = f" Caused by --set {', --set '.join(named)}."
    elif overrides:
        cause = f" Settings given with --set: {', '.join(overrides)}."
    else:
        cause = ""
    return f"The engine failed {stage}: {message.rstrip('.')}.{cause} Nothing was measured and no results file was written."


@contextlib.contextmanager
def engine_stage(stage: str, overrides: tuple[str, ...] = ()) -> Iterator[None]:
    """Inside: any exception from the engine becomes :class:`EngineFailed` (one line, exit 2) naming ``stage``."""
    try:
        yield
    except PASSED:
        raise
    except Exception as e:  # noqa: BLE001 - any engine failure before a measurement is the run's end
        raise EngineFailed(failure_line(stage, e, overrides)) from e
