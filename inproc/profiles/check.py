"""``inproc profile check``: validate a profile against the installed engine, without starting it.

Checks run in order and stop at the first problem, raised as a one-line
:class:`UsageError`. Those that need the engine (its parser, its validators) or the
machine the profile targets (its GPUs, the model's config) say so and are skipped when
this environment cannot run them; nothing loads weights or allocates a device.
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Literal

from inproc import engines
from inproc.engines.base import CheckSkipped
from inproc.errors import UsageError
from inproc.profiles import redact
from inproc.profiles.resolve import adapter_for, profile_env
from inproc.profiles.spec import Profile


@dataclass(frozen=True)
class CheckLine:
    """One check's outcome; failures are raised, not returned."""

    status: Literal["ok", "skipped", "note"]
    check: str
    detail: str


def iter_checks(profile: Profile) -> Iterator[CheckLine]:
    """Yield each passed or skipped check; raise :class:`UsageError` at the first failure."""
    yield CheckLine("ok", "profile", _summary(profile))
    _check_secrets(profile)
    yield _check_model(profile)
    if not engines.get(profile.engine).installed():
        why = (f"needs {profile.engine} importable (this Python: {sys.executable}); "
               f"run with the engine's environment, e.g. .venv-{profile.engine}/bin/python -m inproc profile check")
        for name in ("arguments", "parallel", "settings", "engine config"):
            yield CheckLine("skipped", name, why)
        return
    yield from _engine_checks(profile)


def _summary(p: Profile) -> str:
    m = p.matrix
    return (f"{p.engine}, {len(p.engine_args)} engine arguments, {len(p.env)} env vars, "
            f"{len(m.contexts)} contexts × {len(m.concurrency)} concurrency levels, {p.gpus} GPUs declared")


def _check_secrets(p: Profile) -> None:
    for name, value in p.env.items():
        if redact.is_secret_env(name, value):
            raise UsageError(f"{p.path}: [env] {name} looks like a credential. Profiles are shared: "
                             f"remove it and export {name} in your shell instead.")
    for name, value in p.engine_args.items():
        if redact.is_secret_name(name) or redact.scrub_value(value)[1]:
            raise UsageError(f"{p.path}: engine argument {name!r} holds a credential. Remove it from the profile"
                             " and pass it through the environment (e.g. HF_TOKEN).")


def _check_model(p: Profile) -> CheckLine:
    path = Path(p.model)
    if path.is_absolute():
        if not path.exists():
            raise UsageError(f"{p.path}: model path {p.model!r} does not exist. Fix 'model' (relative paths are "
                             "resolved against the profile's folder) or give a Hugging Face id.")
        if path.is_dir() and not (path / "config.json").is_file() and not (path / "params.json").is_file():
            raise UsageError(f"{p.path}: model folder {p.model!r} has no config.json; point 'model' at the folder holding it.")
        return CheckLine("ok", "model", f"local path {p.model}")
    first = Path(p.path).parent / p.model.split("/")[0]
    if "/" in p.model and first.is_dir():
        raise UsageError(f"{p.path}: model path {str(first.parent / p.model)!r} does not exist "
                         f"(folder {first.name}/ is there). Fix 'model'.")
    return CheckLine("note", "model", _hub_note(p))


def _hub_note(p: Profile) -> str:
    revision = p.engine_args.get("revision")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return f"Hugging Face id {p.model!r}: not checked here (huggingface_hub not installed: pip install 'inproc[hub]')"
    found = try_to_load_from_cache(p.model, "config.json", revision=revision if isinstance(revision, str) else None)
    if isinstance(found, str):
        return f"Hugging Face id {p.model!r}: config.json in the local cache"
    return f"Hugging Face id {p.model!r}: not in the local cache; the engine fetches it on the target machine"


def _engine_checks(p: Profile) -> Iterator[CheckLine]:
    adapter = adapter_for(p.engine)
    with profile_env(p), _naming(p.path):
        args = adapter.parse(p.model, p.engine_args)
        yield CheckLine("ok", "arguments", f"{len(p.engine_args)} read by {adapter.label} {adapter.version()}'s own parser")
        yield _check_parallel(p, adapter, args)
        explicit = adapter.explicit_fields(p.model, p.engine_args)
        yield CheckLine("ok", "settings", adapter.argument_checks(args, explicit))
        try:
            yield CheckLine("ok", "engine config", adapter.engine_config_check(args, p.gpus))
        except CheckSkipped as e:
            yield CheckLine("skipped", "engine config", f"{e} (argument-level checks above still apply)")


@contextlib.contextmanager
def _naming(path: str):
    """Engine-level errors name the profile file first, like the schema errors do."""
    try:
        yield
    except UsageError as e:
        if str(e).startswith(path):
            raise
        raise UsageError(f"{path}: {e}") from None


def _check_parallel(p: Profile, adapter, args) -> CheckLine:
    need, text = adapter.parallel_layout(args)
    if p.gpus == 0:
        if need > 1:
            return CheckLine("note", "parallel", f"{text}: {need} CPU workers (gpus = 0, a CPU profile)")
        return CheckLine("ok", "parallel", f"{text}: one CPU worker (gpus = 0)")
    if need > p.gpus:
        raise UsageError(f"the parallel sizes need {need} GPUs ({text}) but the profile declares gpus = {p.gpus}."
                         " Lower the sizes or raise 'gpus'.")
    if need < p.gpus:
        return CheckLine("note", "parallel", f"{text} uses {need} of the {p.gpus} GPUs declared")
    return CheckLine("ok", "parallel", f"{text} = {need} GPUs, as declared")
