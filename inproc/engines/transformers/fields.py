"""The profile's ContinuousBatchingConfig fields and model settings checked before anything is built.

Each field is coerced to the type the installed ``ContinuousBatchingConfig`` declares (its
dataclass annotations), and the sizes the engine divides or allocates by are checked against the
bounds it needs: a block of at least one token, at least one block, one token of batch budget,
one request per batch. A key the build would not apply is refused: the block's tokens named
twice (``block-size`` and the version's ``page_size``/``block_size``: one would silently win).
Each refusal is one line naming the key, the bad value and what it takes (exit 2).
"""
from __future__ import annotations

import functools
import types
import typing

from inproc.errors import UsageError

#: Fields that hold a count the engine sizes its pool or batch by: a whole number of at least 1 when set.
POSITIVE_FIELDS = ("page_size", "block_size", "num_blocks", "max_batch_tokens", "max_requests_per_batch",
                   "max_blocks_per_request")
#: The model's own settings that take a whole number of at least 1 when set.
POSITIVE_OPTIONS = ("max_model_len", "torch_threads")
#: The names one block's tokens goes by (the profile's own and the two fields of the installed versions).
BLOCK_NAMES = ("block-size", "page-size")


@functools.lru_cache(maxsize=4)
def field_types(config_class: type) -> dict[str, object]:
    """ContinuousBatchingConfig's field name -> its annotated type, as the installed version declares it."""
    return typing.get_type_hints(config_class)


def _kinds(annotation) -> tuple[type, ...]:
    """The plain types an annotation allows (``int | None`` -> (int, NoneType)); () for anything else."""
    union = isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    args = typing.get_args(annotation) if union else (annotation,)
    plain = (int, float, bool, str, type(None))
    return args if all(a in plain for a in args) else ()  # a tuple or a config object: the engine's own check


def coerce(name: str, value: object, types: dict[str, object], label: str = "") -> object:
    """``value`` as the type field ``name`` declares in ``types``; one line (naming ``label``, else the field) when
    it is none of them."""
    kinds = _kinds(types.get(name))
    if not kinds or any(_is(value, k) for k in kinds):
        return float(value) if float in kinds and not _is(value, float) and _is(value, int) else value
    if float in kinds and _is(value, int):
        return float(value)
    wanted = " or ".join({int: "a whole number", float: "a number", bool: "true/false", str: "a name",
                          type(None): "null"}[k] for k in kinds)
    raise UsageError(f"Bad transformers argument {label or name.replace('_', '-')} = {value!r}: ContinuousBatchingConfig."
                     f"{name} takes {wanted}.")


def _is(value: object, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, float)
    return isinstance(value, kind)


def check_positive(name: str, value: object, label: str = "") -> None:
    """A size the engine allocates or divides by: a whole number of at least 1 (None leaves the engine's default)."""
    if value is None:
        return
    if not _is(value, int) or value < 1:
        raise UsageError(f"Bad transformers argument {label or name.replace('_', '-')} = {value!r}: give a whole number of "
                         f"1 or more (or leave it out for transformers' default).")


def check_block_names(engine_args: dict[str, object]) -> None:
    """One name for a block's tokens: two would leave one of them unapplied."""
    given = [k for k in engine_args if k.replace("_", "-") in BLOCK_NAMES]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(repr(k) for k in given)} name one setting (a cache block's tokens); "
                         f"give it once, as block-size (e.g. --set block-size={engine_args[given[-1]]}).")


def checked_fields(fields: dict[str, object], config_class: type, block: str) -> dict[str, object]:
    """The profile's ContinuousBatchingConfig fields coerced to their types, the sizes checked; ``block``, the
    field that holds the profile's ``block-size``, is named so."""
    label, types = {block: "block-size"}, field_types(config_class)
    out = {name: coerce(name, value, types, label.get(name, "")) for name, value in fields.items()}
    for name in POSITIVE_FIELDS:
        check_positive(name, out.get(name), label.get(name, ""))
    return out
