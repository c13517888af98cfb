"""Launch commands read into profiles (``inproc profile import``), with the engine's own parser.

The helpers here take any argparse parser: what a command line sets explicitly, and
profile values that the same parser reads back exactly as it read the command.
"""
from __future__ import annotations

import argparse
import functools
import json
from dataclasses import dataclass

from inproc.engines.flags import canonical_name, parse, render_flags
from inproc.errors import UsageError


@dataclass(frozen=True)
class GivenArg:
    """One argument that a command line sets explicitly, as the engine's parser read it."""

    dest: str
    name: str  # canonical flag name without dashes, e.g. "tensor-parallel-size"
    value: object  # what the parser stored
    raws: tuple[str, ...]  # the strings its type function received (after parser preprocessing)


@dataclass(frozen=True)
class CommandRead:
    """A launch command as its engine's parser read it, sorted for a profile."""

    model: str
    engine_args: dict[str, object]  # flag name -> profile value, for the flags kept
    dropped: dict[str, str]  # "--flag" -> why it is not carried over
    raws: dict[str, tuple[str, ...]]  # "--flag" -> the strings the parser received (to blank credentials)


def read_command(given: dict[str, GivenArg], model: str, why_dropped, parser, reference, model_flag: str,
                 label: str) -> CommandRead:
    """Sort a launch command's given arguments into kept and dropped, with exact profile values.

    ``why_dropped(dest)`` says why an argument is left out of the profile ("" keeps it);
    ``reference`` is the namespace the engine's own parser made of the whole command.
    """
    kept: dict[str, GivenArg] = {}
    dropped: dict[str, str] = {}
    for dest, arg in given.items():
        why = why_dropped(dest)
        if why:
            dropped["--" + arg.name] = why
        else:
            kept[dest] = arg
    values = exact_values(parser, kept, reference, [model_flag, model], label)
    raws = {"--" + a.name: a.raws for a in given.values()}
    return CommandRead(model, values, dropped, raws)


def given_args(parser, argv: list[str], label: str) -> dict[str, GivenArg]:
    """What ``argv`` sets explicitly, read by ``parser`` (which this call modifies: pass a fresh one).

    Every default becomes ``SUPPRESS``, so only arguments on the command line land in the
    namespace, however they were spelt (abbreviation, ``_`` for ``-``, dotted JSON keys).
    Each type function is wrapped to record the exact string it received.
    """
    raws: dict[str, list[str]] = {}
    for action in parser._actions:
        if action.dest == "help":
            continue
        action.default = argparse.SUPPRESS
        if callable(action.type):
            action.type = _recording(action.type, raws.setdefault(action.dest, []))
        elif action.type is None and action.nargs != 0:
            action.type = _recording(str, raws.setdefault(action.dest, []))
    ns = parse(parser, argv, label)
    by_dest = {a.dest: a for a in parser._actions if a.option_strings}
    out = {}
    for dest, value in vars(ns).items():
        action = by_dest.get(dest)
        name = canonical_name(action) if action else dest
        out[dest] = GivenArg(dest, name, value, tuple(raws.get(dest, ())))
    return out


def _recording(fn, sink: list[str]):
    @functools.wraps(fn)
    def wrapper(text):
        sink.append(text)
        return fn(text)

    return wrapper


def profile_value(arg: GivenArg) -> object:
    """A TOML-friendly value that renders back to the same parse: typed scalars, JSON as tables."""
    value = arg.value
    if isinstance(value, (list, tuple)) and len(arg.raws) == len(value) and arg.raws:
        return [_one_value(v, r) for v, r in zip(value, arg.raws)]
    raw = arg.raws[-1] if arg.raws else None
    return _one_value(value, raw)


def _one_value(value: object, raw: str | None) -> object:
    if isinstance(value, (bool, int, float)) or (type(value) is str):
        return value
    if raw is None:
        return value
    try:
        loaded = json.loads(raw)
    except ValueError:
        return raw
    return loaded if isinstance(loaded, dict) and toml_representable(loaded) else raw


def toml_representable(value: object) -> bool:
    """True when TOML can hold the value (no nulls; tables keyed by strings)."""
    if value is None:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and toml_representable(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(toml_representable(v) for v in value)
    return isinstance(value, (str, int, float, bool))


def exact_values(parser, kept: dict[str, GivenArg], reference, prefix: list[str], label: str) -> dict[str, object]:
    """Profile values for ``kept`` that ``parser`` reads back exactly as it read the original command.

    Typed values first (numbers, booleans, JSON as tables); any argument that would not
    come back identical falls back to the very string(s) the engine's parser received.
    """
    values = {arg.name: profile_value(arg) for arg in kept.values()}
    for _ in range(2):
        ns = parse(parser, prefix + render_flags(parser, values, label, ""), label)
        bad = [a for a in kept.values() if getattr(ns, a.dest, None) != getattr(reference, a.dest, None)]
        if not bad:
            return values
        for a in bad:
            if a.raws:
                values[a.name] = list(a.raws) if isinstance(a.value, (list, tuple)) else a.raws[-1]
    raise UsageError(
        f"Could not carry --{bad[0].name} over exactly: {label} reads it as {getattr(ns, bad[0].dest, None)!r}"
        f" from the profile but {getattr(reference, bad[0].dest, None)!r} from the command. Please report this."
    )
