"""A profile's engine arguments as the engine will receive them (``inproc profile show``).

The profile is rendered into the engine's own command line and parsed by the engine's own
parser into ``EngineArgs`` (vLLM) or ``ServerArgs`` (SGLang); we then list what differs
from the engine's defaults for the same model. Needs the engine importable.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
from dataclasses import dataclass

from inproc.profile import Profile
from inproc.profile_import import engine_module

_CHECKS = {"vllm": "inproc.engines.vllm_check", "sglang": "inproc.engines.sglang_check"}
_PROGRAM = {"vllm": "vllm serve", "sglang": "sglang serve"}


@dataclass(frozen=True)
class ResolvedProfile:
    """What the engine receives: its version, the equivalent command line, and its argument object's fields."""

    engine: str
    version: str
    argv: tuple[str, ...]  # the flags, as `vllm serve` / `sglang serve` would take them
    changed: dict[str, object]  # field -> value, where it differs from the engine's default
    fields: dict[str, object]  # every field of EngineArgs / ServerArgs
    args: object  # the EngineArgs / ServerArgs itself

    @property
    def command(self) -> str:
        import shlex

        return f"{_PROGRAM[self.engine]} {shlex.join(self.argv)}"


def check_module(engine: str):
    return importlib.import_module(_CHECKS[engine])


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


def build_args(profile: Profile):
    """``EngineArgs`` / ``ServerArgs`` from the profile, through the engine's own parser."""
    mod = engine_module(profile.engine)
    if profile.engine == "vllm":
        return mod.engine_args_from_profile(profile.model, profile.engine_args)
    return mod.server_args_from_profile(profile.model, profile.engine_args)


def resolve(profile: Profile) -> ResolvedProfile:
    """The profile as its engine will receive it; see :class:`ResolvedProfile`."""
    mod = engine_module(profile.engine)
    with profile_env(profile):
        argv = mod.profile_args_to_argv(profile.model, profile.engine_args)
        args = build_args(profile)
        default = build_args(dataclasses.replace(profile, engine_args={}))
    mine, base = mod.settings(args), mod.settings(default)
    changed = {k: _diff(v, base.get(k)) for k, v in mine.items() if _differs(v, base.get(k))}
    return ResolvedProfile(profile.engine, mod.version(), tuple(argv), changed, mine, args)


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
