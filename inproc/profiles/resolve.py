"""A profile's engine arguments as the engine will receive them (``inproc profile show``).

The profile is rendered into the engine's own command line and parsed by the engine's own
parser into its argument object; we then list what differs from the engine's defaults for
the same model. Needs the engine importable (:func:`adapter_for`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
from dataclasses import dataclass

from inproc import engines
from inproc.engines.base import EngineAdapter
from inproc.errors import UsageError
from inproc.profiles.spec import Profile


@dataclass(frozen=True)
class ResolvedProfile:
    """What the engine receives: its version, the equivalent command line, and its argument object's fields."""

    engine: str
    version: str
    command: str  # the launch command with these arguments (`vllm serve …`)
    changed: dict[str, object]  # field -> value, where it differs from the engine's default
    fields: dict[str, object]  # every field of the argument object
    args: object  # the argument object itself (EngineArgs, ServerArgs, ...)


def adapter_for(engine: str) -> EngineAdapter:
    """The engine's adapter, after checking the engine itself can be imported here."""
    adapter = engines.get(engine)
    if not adapter.installed():
        raise UsageError(
            f"Reading a {engine} command needs {engine} importable in this Python ({sys.executable}). "
            f"Run it with the engine's environment, e.g. .venv-{engine}/bin/python -m inproc profile …"
        )
    return adapter


@contextlib.contextmanager
def profile_env(profile: Profile):
    """The profile's environment variables, set for the duration (engines read some at parse time)."""
    saved = {k: os.environ.get(k) for k in profile.env}
    os.environ.update(profile.env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def resolve(profile: Profile) -> ResolvedProfile:
    """The profile as its engine will receive it; see :class:`ResolvedProfile`."""
    adapter = adapter_for(profile.engine)
    with profile_env(profile):
        argv = adapter.argv(profile.model, profile.engine_args)
        args = adapter.parse(profile.model, profile.engine_args)
        default = adapter.parse(profile.model, {})
    mine, base = adapter.settings(args), adapter.settings(default)
    changed = {k: _diff(v, base.get(k)) for k, v in mine.items() if _differs(v, base.get(k))}
    return ResolvedProfile(profile.engine, adapter.version(), adapter.command_line(argv), changed, mine, args)


def _differs(a: object, b: object) -> bool:
    try:
        return bool(a != b)
    except Exception:  # some config objects refuse comparison; show them
        return True


def _diff(value: object, default: object) -> object:
    """For config objects (``CompilationConfig``), only the sub-fields that differ."""
    if dataclasses.is_dataclass(value) and type(value) is type(default):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)
                if _differs(getattr(value, f.name), getattr(default, f.name))}
    return value


def show_value(value: object) -> str:
    """One value on one line: JSON for tables and lists, repr-free for strings."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)
