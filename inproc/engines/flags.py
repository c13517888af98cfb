"""Profile engine arguments <-> an engine's own argparse parser (plain Python, no engine import).

Both engines define their command line with argparse (vLLM's ``EngineArgs.add_cli_args``,
SGLang's ``ServerArgs.add_cli_args``). Rather than mapping names by hand, a profile's
``{flag-name: value}`` table is rendered back into flags for that parser, and a launch
command is read by that parser. The helpers here render and parse, for any parser;
reading a launch command back into profile values is ``commands.py``.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import difflib
import io
import json
import re
from inproc.errors import UsageError


# pydantic appends "[type=..., input_value=..., input_type=...]" to each error: noise on one line.
PYDANTIC_CONTEXT = re.compile(r"\s*\[type=[^\]]*\]")


def option_names(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every long flag name (no dashes) a profile may use, mapped to its action.

    ``--no-X`` spellings are left out: a profile says ``X = false`` instead.
    """
    names: dict[str, argparse.Action] = {}
    for action in parser._actions:
        negated = isinstance(action, argparse.BooleanOptionalAction)
        for opt in action.option_strings:
            if opt.startswith("--") and not (negated and opt.startswith("--no-")):
                names[opt[2:]] = action
    return names


def canonical_name(action: argparse.Action) -> str:
    """The flag's first long spelling, e.g. ``tensor-parallel-size`` for ``--tensor-parallel-size/-tp``."""
    return next((o[2:] for o in action.option_strings if o.startswith("--")), action.dest.replace("_", "-"))


def closest(name: str, choices, n: int = 3) -> list[str]:
    """The valid names nearest to a misspelt one: difflib, else names it starts (short forms like ``tp``)."""
    choices = sorted(set(choices))
    found = difflib.get_close_matches(name, choices, n=n, cutoff=0.6)
    if not found:
        found = sorted((c for c in choices if c.startswith(name)), key=len)[:n]
    if not found:
        found = sorted((c for c in choices if name in c), key=len)[:n]
    return found


def unknown_name_error(name: str, names, label: str, help_hint: str) -> UsageError:
    near = closest(name, names)
    hint = f" Closest: {', '.join(near)}." if near else ""
    return UsageError(f"Unknown {label} argument {name!r}.{hint} See {help_hint} for every argument.")


def _flag_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    return str(value)


def render_flags(parser, engine_args: dict[str, object], label: str, help_hint: str) -> list[str]:
    """Render ``{flag-name: value}`` as flags for ``parser``; names must be the parser's own."""
    names = option_names(parser)
    argv: list[str] = []
    for key, value in engine_args.items():
        name = key.replace("_", "-")
        action = names.get(name)
        if action is None:
            raise unknown_name_error(key, names, label, help_hint)
        argv += _render_one(action, name, value, label)
    return argv


def _render_one(action: argparse.Action, name: str, value: object, label: str) -> list[str]:
    flag = "--" + name
    if value is None:
        return []
    if isinstance(action, argparse.BooleanOptionalAction):
        if not isinstance(value, bool):
            raise UsageError(f"{label} argument {name!r} is on/off: write {name} = true or false, not {value!r}.")
        return [flag] if value else ["--no-" + name]
    if action.nargs == 0:  # store_true / store_false / store_const: the flag alone sets a constant
        if value == action.const:
            return [flag]
        if value == action.default:
            return []
        raise UsageError(
            f"{label} argument {name!r} is a flag that can only be set to {action.const!r}"
            f" (default {action.default!r}); got {value!r}."
        )
    if action.nargs == "?" and action.const is not None and value == action.const:
        return [flag]  # e.g. vLLM's `--hf-token` alone means True
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, (list, tuple)) else [value]
        return [x for item in items for x in (flag, _flag_value(item))]
    if action.nargs in ("+", "*") or isinstance(action.nargs, int):
        items = value if isinstance(value, (list, tuple)) else [value]
        return [flag, *[_flag_value(v) for v in items]]
    return [flag, _flag_value(value)]


def profile_argv(parser, model_flag: str, model: str, engine_args: dict[str, object], model_keys: tuple[str, ...],
                 label: str, help_hint: str) -> list[str]:
    """A profile as the engine's command line: ``model_flag MODEL`` then its engine arguments."""
    for key in engine_args:
        if key.replace("_", "-") in model_keys:
            raise UsageError(f"Engine argument {key!r} belongs in the profile's top-level 'model' key.")
    return [model_flag, model, *render_flags(parser, engine_args, label, help_hint)]


def error_text(e: BaseException) -> str:
    """An exception's message with its whitespace folded onto one line (its type if it has none)."""
    return " ".join(str(e).split()) or type(e).__name__


def one_line(text: str) -> str:
    """Engine error text on one line; pydantic's indented message joins its field (``field: message``)."""
    parts: list[str] = []
    for ln in text.splitlines():
        if not ln.strip() or "errors.pydantic.dev" in ln:
            continue
        if ln[:1].isspace() and parts:
            parts[-1] += ": " + ln.strip()
        else:
            parts.append(ln.strip())
    text = PYDANTIC_CONTEXT.sub("", " ".join(parts))
    text = re.sub(r"\d+ validation errors? for \w+:? ", "", text).replace("Value error, ", "")
    return re.sub(r"\s+", " ", text).strip()


def _one_line_argparse_error(text: str) -> str:
    """argparse prints usage then ``prog: error: ...`` (pydantic adds more lines); keep the error."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ": error: " in ln), None)
    if start is None:
        kept = [ln for ln in lines if ln.strip()][-1:]
    else:
        kept = [lines[start].split(": error: ", 1)[1], *lines[start + 1:]]
    return one_line("\n".join(kept)) or "invalid arguments"


def parse(parser, argv: list[str], label: str) -> argparse.Namespace:
    """Run the engine's parser; its errors (argparse exit, ValueError) become one :class:`UsageError`."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(argv)
    except SystemExit:
        msg = _one_line_argparse_error(err.getvalue())
    except ValueError as e:  # vLLM's FlexibleArgumentParser raises ValueError for some layouts
        msg = one_line(str(e))
    if msg.startswith("unrecognized arguments:"):
        flag = next((w for w in msg.split()[2:] if w.startswith("--")), None)
        near = closest(flag.split("=")[0][2:], option_names(parser)) if flag else []
        msg += f". Closest: {', '.join('--' + n for n in near)}" if near else ""
    raise UsageError(f"{label} rejected the arguments: {msg.rstrip('.')}.")


def build_args(parser, argv: list[str], label: str, from_cli_args, prepare=None):
    """Parse ``argv`` with the engine's parser, then build its argument object with ``from_cli_args``.

    ``prepare(namespace)`` may add what the engine's own launcher adds between the two
    steps. Parser errors and the builder's ``ValueError`` / ``TypeError`` become one line.
    """
    # The parser is shared, and argparse hands the same default objects (config dataclasses)
    # to every namespace; an engine built from them may change them in place. A copy keeps
    # the next parse from inheriting what one engine did to its arguments.
    ns = copy.deepcopy(parse(parser, argv, label))
    if prepare is not None:
        prepare(ns)
    try:
        return from_cli_args(ns)
    except (ValueError, TypeError) as e:
        raise UsageError(f"{label} rejected the arguments: {error_text(e)}") from None
