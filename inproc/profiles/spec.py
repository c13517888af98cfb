"""Launch profiles: which engine, which model, its arguments, and the matrix to run.

A profile is a TOML file (see ``launch_profiles/`` and ``docs/profiles.md``). Engine
arguments keep the engine's own CLI names (``tensor-parallel-size``, ``compilation-config``
as a table); adapters render them back into the engine's parser. Relative model paths are
resolved against the profile's folder. Plain Python: no engine is imported here.
"""
from __future__ import annotations

import os
import re
import tomllib
import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from inproc import engines
from inproc.errors import UsageError
from inproc.plan.acceptance import Acceptance, from_profile, in_profile
from inproc.plan.settings import ANATOMY_CHOICES, MatrixSettings
from inproc.types import LaunchSpec
from inproc.units import parse_cell_list, parse_tokens

TOP_LEVEL_KEYS = ("engine", "model", "hardware", "notes", "gpus", "engine_args", "env", "matrix", "speculative")


@dataclass(frozen=True)
class Profile:
    """A launch profile, resolved: engine arguments as the engine's CLI names them."""

    name: str
    engine: str  # a registered engine name (inproc.engines.names())
    model: str
    engine_args: dict[str, object] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    matrix: MatrixSettings = field(default_factory=MatrixSettings)
    hardware: str = ""
    notes: str = ""
    gpus: int = 0
    path: str = ""
    overrides: tuple[str, ...] = ()  # the --set KEY=VALUE strings applied, in order
    # A forced draft acceptance ([speculative] acceptance, --acceptance): None, the engine's own.
    acceptance: Acceptance | None = None

    @property
    def launch(self) -> LaunchSpec:
        """What the engine adapter builds from this profile (a forced acceptance put where the engine reads it)."""
        launch = LaunchSpec(self.engine, self.model, dict(self.engine_args), dict(self.env))
        return engines.get(self.engine).force_acceptance(launch, self.acceptance) if self.acceptance else launch

    def with_acceptance(self, acceptance: Acceptance | None) -> "Profile":
        """This profile with ``acceptance`` forced (None keeps the profile's own); checked against its
        engine and draft count at once, so bad input is one line before anything is built."""
        if acceptance is None:
            return self
        forced = replace(self, acceptance=acceptance)
        forced.launch  # noqa: B018 -- the adapter's checks: a profile without speculation, k, the engine's support
        return forced

    def with_overrides(self, sets: tuple[str, ...]) -> "Profile":
        """Apply ``--set KEY=VALUE`` overrides (VALUE parsed as TOML when it can be).

        ``KEY`` is an engine argument by its CLI name, may reach into a table argument
        (``--set speculative-config.num_speculative_tokens=2``), or is ``env.NAME``: an
        environment variable of the engine, set before it is imported (the profile's [env]).
        ``!KEY`` removes the engine argument KEY (nothing where the profile lacks it); where that leaves no
        speculation, a forced acceptance ([speculative] acceptance) goes with it.
        """
        args, env = dict(self.engine_args), dict(self.env)
        for item in sets:
            if item.startswith(UNSET_PREFIX):  # --set '!KEY': the argument removed (a sweep's variant without speculation)
                args.pop(item[len(UNSET_PREFIX):].strip().replace("_", "-"), None)
                continue
            key, sep, raw = item.partition("=")
            top, _, sub = key.strip().partition(".")
            if sep and top == ENV_PREFIX:
                env[_env_name(sub, item)] = _env_value(raw)
                continue
            top = top.replace("_", "-")
            if not sep or not top:
                raise UsageError(f"Bad --set {item!r}. Use --set KEY=VALUE, e.g. --set max-num-seqs=4.")
            if top in engines.model_args():
                raise UsageError(f"Bad --set {item!r}: the model is the profile's 'model' key, not an engine argument.")
            args[top] = _set_nested(args.get(top), sub, _parse_value(raw), item) if sub else _parse_value(raw)
        unset = any(item.startswith(UNSET_PREFIX) for item in sets)
        drafts = not unset or engines.get(self.engine).speculation_keys(args)
        return replace(self, engine_args=args, env=env, overrides=self.overrides + tuple(sets),
                       acceptance=self.acceptance if drafts else None)


ENV_PREFIX = "env"  # --set env.NAME=VALUE
UNSET_PREFIX = "!"  # --set '!KEY': no KEY (an engine argument's name cannot start with it)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env_name(name: str, item: str) -> str:
    if not _ENV_NAME.match(name):
        raise UsageError(f"Bad --set {item!r}: {name!r} is not an environment variable name. "
                         "Use env.NAME=VALUE, e.g. env.VLLM_CPU_KVCACHE_SPACE=2.")
    return name


def _env_value(raw: str) -> str:
    """Environment values are text: a quoted TOML string loses its quotes, anything else is kept as written."""
    value = _parse_value(raw)
    return value if isinstance(value, str) else raw.strip()


def _set_nested(table: object, path: str, value: object, item: str) -> dict:
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise UsageError(f"Bad --set {item!r}: {path.split('.')[0]!r} is inside an argument that is not a table.")
    head, _, rest = path.partition(".")
    out = dict(table)
    out[head] = _set_nested(out.get(head), rest, value, item) if rest else value
    return out


def _parse_value(raw: str) -> object:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _matrix_from_table(table: object, where: str) -> MatrixSettings:
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [matrix] must be a table, e.g. [matrix] window_s = 30.")
    hints = typing.get_type_hints(MatrixSettings)
    known = [f.name for f in fields(MatrixSettings)]
    kwargs: dict[str, object] = {}
    for key, value in table.items():
        if key not in hints:
            raise UsageError(f"{where}: unknown [matrix] key {key!r}. Known keys: {', '.join(known)}.")
        try:
            kwargs[key] = _matrix_value(key, value, hints[key])
        except UsageError as e:
            raise UsageError(f"{where}: [matrix] {e}") from None
    try:
        return MatrixSettings(**kwargs)
    except UsageError as e:
        raise UsageError(f"{where}: [matrix] {e}") from None


def _matrix_value(key: str, value: object, hint: object) -> object:
    """Check one [matrix] value against the MatrixSettings field type (the one schema)."""
    if key == "cells":
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise UsageError("cells must be a non-empty list of CONTEXTxCONCURRENCY strings, "
                             f"e.g. cells = [\"8Kx1\", \"8Kx16\"]; got {value!r}.")
        return parse_cell_list(",".join(value))
    if "tuple" in str(hint):  # contexts / prefill_contexts / concurrency: lists
        if not isinstance(value, list) or not value:
            raise UsageError(f"{key} must be a non-empty list, e.g. {key} = [\"8K\", \"16K\"]; got {value!r}.")
        if key == "concurrency":
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise UsageError(f"concurrency must be whole numbers, e.g. [1, 2, 4]; got {value!r}.")
            return tuple(value)
        return tuple(parse_tokens(v, "prefill context" if key == "prefill_contexts" else "context") for v in value)
    if key in ("anatomy", "kernels"):  # spelled as --anatomy and --kernels are: on / off
        if not isinstance(value, str) or value not in ANATOMY_CHOICES:
            shown = str(value).lower() if isinstance(value, bool) else repr(value)
            raise UsageError(f"{key} must be \"on\" or \"off\" (as --{key}); got {shown}.")
        return value == "on"
    if hint in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (hint is int and not isinstance(value, int)):
            raise UsageError(f"{key} must be {'a whole number' if hint is int else 'a number'}; got {value!r}.")
        return value
    if not isinstance(value, str):
        raise UsageError(f"{key} must be a string; got {value!r}.")
    return value


def _engine_args(table: object, where: str) -> dict[str, object]:
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [engine_args] must be a table of engine flags, e.g. tensor-parallel-size = 8.")
    out: dict[str, object] = {}
    for key, value in table.items():
        name = key.replace("_", "-")
        if name in engines.model_args():
            raise UsageError(f"{where}: engine argument {key!r} names the model; use the top-level 'model' key.")
        if name in out:
            raise UsageError(f"{where}: engine argument {name!r} is given twice (as '-' and '_' spellings).")
        if _has_datetime(value):
            raise UsageError(f"{where}: engine argument {key!r} holds a TOML date/time; engines take strings, numbers, booleans, lists or tables.")
        out[name] = value
    return out


def _has_datetime(value: object) -> bool:
    import datetime

    if isinstance(value, (datetime.date, datetime.time)):
        return True
    if isinstance(value, dict):
        return any(_has_datetime(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_datetime(v) for v in value)
    return False


def _env(table: object, where: str) -> dict[str, str]:
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [env] must be a table of environment variables, e.g. VLLM_CPU_KVCACHE_SPACE = \"1\".")
    out = {}
    for key, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise UsageError(f"{where}: [env] {key} must be a string or number (env vars are text), e.g. {key} = \"1\"; got {value!r}.")
        out[key] = str(value)
    return out


def _speculative(table: object, where: str) -> Acceptance | None:
    """The [speculative] table: ``acceptance`` forced (a mean length or per-position rates), or nothing."""
    if not isinstance(table, dict) or set(table) - {"acceptance"}:
        raise UsageError(f"{where}: [speculative] holds one key, acceptance: a mean acceptance length "
                         "(acceptance = 2.5) or per-position unconditional rates (acceptance = [0.9, 0.7, 0.5]).")
    return from_profile(table["acceptance"], where) if "acceptance" in table else None


def _resolve_model(model: object, folder: Path, where: str) -> str:
    if not isinstance(model, str) or not model.strip():
        raise UsageError(f"{where}: 'model' must be a local path or a model id, e.g. model = \"models/tiny-llama\".")
    if model.startswith("~"):
        return str(Path(model).expanduser())
    local = folder / model
    if model.startswith((".", "/")) or local.exists():
        return str(local.resolve())
    return model


def load_profile(path: str | os.PathLike) -> Profile:
    """Read and check a profile file; every problem is a one-line :class:`UsageError`."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"No profile file at {str(path)!r}. Profiles shipped: {', '.join(shipped_profiles())}.")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{p}: not valid TOML ({e}).") from None
    except UnicodeDecodeError:
        raise UsageError(f"{p}: not a text file; a profile is TOML (see docs/profiles.md).") from None
    unknown = sorted(set(data) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise UsageError(f"{p}: unknown key {unknown[0]!r}. Known keys: {', '.join(TOP_LEVEL_KEYS)}.")
    engine = data.get("engine")
    try:
        engines.get(engine)
    except UsageError as e:
        raise UsageError(f"{p}: {str(e)[:1].lower()}{str(e)[1:]}") from None
    gpus = data.get("gpus", 0)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise UsageError(f"{p}: 'gpus' must be a whole number of GPUs (0 for a CPU profile); got {gpus!r}.")
    for key in ("hardware", "notes"):
        if not isinstance(data.get(key, ""), str):
            raise UsageError(f"{p}: {key!r} is free text; write it as a string.")
    return Profile(
        name=p.stem,
        engine=engine,
        model=_resolve_model(data.get("model"), p.parent, str(p)),
        engine_args=_engine_args(data.get("engine_args", {}), str(p)),
        env=_env(data.get("env", {}), str(p)),
        matrix=_matrix_from_table(data.get("matrix", {}), str(p)),
        hardware=data.get("hardware", ""),
        notes=data.get("notes", ""),
        gpus=gpus,
        path=str(p.resolve()),
        acceptance=_speculative(data.get("speculative", {}), str(p)),
    )


def profiles_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "launch_profiles"


def shipped_profiles() -> list[str]:
    d = profiles_dir()
    return sorted(str(f.relative_to(d.parent)) for f in d.glob("*.toml")) if d.is_dir() else []


def load_with_overrides(path: str | os.PathLike, sets: tuple[str, ...] = (), acceptance: Acceptance | None = None) -> Profile:
    """:func:`load_profile`, then the ``--set KEY=VALUE`` overrides in order, then a forced acceptance
    (``--acceptance``: it replaces the profile's own [speculative] acceptance), checked against the engine."""
    profile = load_profile(path)
    profile = profile.with_overrides(tuple(sets)) if sets else profile
    if acceptance is not None:
        return profile.with_acceptance(acceptance)
    try:
        return profile.with_acceptance(profile.acceptance)
    except UsageError as e:
        raise in_profile(e, str(path)) from None
