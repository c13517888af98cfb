"""The engine registry: every subpackage of ``inproc.engines`` is one engine.

A subpackage registers itself by defining ``ADAPTER`` (an :class:`EngineAdapter`) in its
``__init__``, which must stay light: the engine itself is imported only when an adapter
method needs it. A third engine is one new folder here.
"""
from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from typing import Callable, Sequence

from inproc.engines.base import CheckSkipped, Engine, EngineAdapter, EngineBuildError
from inproc.engines.pieces import engine_imports
from inproc.errors import UsageError
from inproc.types import LaunchSpec, Placement

__all__ = ["CheckSkipped", "Engine", "EngineAdapter", "EngineBuildError", "adapters", "build_engine", "get", "names",
           "head_placement", "run_worker"]


@functools.lru_cache(maxsize=1)
def adapters() -> dict[str, EngineAdapter]:
    """Every registered engine, by name."""
    found: dict[str, EngineAdapter] = {}
    for mod in pkgutil.iter_modules(__path__):
        if not mod.ispkg:
            continue
        adapter = getattr(importlib.import_module(f"{__name__}.{mod.name}"), "ADAPTER", None)
        if isinstance(adapter, EngineAdapter):
            found[adapter.name] = adapter
    return dict(sorted(found.items()))


def names() -> tuple[str, ...]:
    return tuple(adapters())


def get(name: object) -> EngineAdapter:
    """The adapter of ``name``; an unknown name is a one-line error listing the known ones."""
    found = adapters().get(name) if isinstance(name, str) else None
    if found is None:
        raise UsageError(f"Unknown engine {name!r}. Known engines: {', '.join(names())}.")
    return found


def model_args() -> frozenset[str]:
    """Engine arguments that name the model (a profile names it once, in its ``model`` key)."""
    return frozenset(k for a in adapters().values() for k in a.args_module().MODEL_KEYS)


def software() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(import name, distribution names) of every registered engine, for run metadata."""
    return tuple((a.package, a.distributions) for a in adapters().values())


def for_command(words: Sequence[str]) -> tuple[EngineAdapter, list[str]] | None:
    """The adapter whose launch command ``words`` is, and the words after its launcher.

    ``words`` starts at the program (environment assignments already taken off); a
    program path (``$HOME/env/bin/sglang``) counts by its basename, and ``python -m``
    forms are matched after the interpreter.
    """
    if not words:
        return None
    head = [os.path.basename(words[0]), *words[1:]]
    after_python = list(words[1:]) if _is_python(head[0]) else None
    for adapter in adapters().values():
        for form in adapter.launchers:
            n = len(form)
            if form[0] == "-m":
                if after_python is not None and tuple(after_python[:n]) == form:
                    return adapter, after_python[n:]
            elif tuple(head[:n]) == form:
                return adapter, list(words[n:])
    return None


def _is_python(program: str) -> bool:
    stem = program.removeprefix("python")
    return program.startswith("python") and all(part.isdigit() for part in stem.split(".") if part)


def build_engine(launch: LaunchSpec) -> Engine:
    """Apply the launch's environment, then build its engine in this process."""
    # Engines read many settings from the environment at import time, so this comes first.
    os.environ.update(launch.env)
    adapter = get(launch.engine)
    adapter.quiet()
    with engine_imports(adapter):
        return adapter.build(launch)


def head_placement(launch: LaunchSpec) -> Placement:
    """Where the launch's ranks will run, read from its arguments before anything is built.

    This process is the head (node rank 0): a profile naming another node rank is refused.
    """
    os.environ.update(launch.env)
    adapter = get(launch.engine)
    args = adapter.parse(launch.model, dict(launch.engine_args))
    adapter.check_head(args)
    return adapter.placement(args)


def run_worker(launch: LaunchSpec, node_rank: int, echo: Callable[[str], None]) -> int:
    """Apply the launch's environment, then run node ``node_rank``'s ranks until the head is gone."""
    os.environ.update(launch.env)
    adapter = get(launch.engine)
    adapter.quiet()
    with engine_imports(adapter):
        return adapter.run_worker(launch, node_rank, echo)
