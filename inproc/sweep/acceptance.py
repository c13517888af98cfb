"""``inproc sweep --acceptance L1,L2,... | --break-even``: the variants of a where-speculation-pays sweep.

One variant is the profile with speculation removed (the engine's speculation arguments dropped,
``--set '!KEY'``); the others are the speculative variants: one per forced acceptance length
(``inproc run --acceptance L``), crossed with the ``--vary`` variants, or the ``--vary`` variants
alone with ``--break-even`` (temperature-free knobs that change acceptance: the draft count, the
n-gram windows). ``inproc.sweep.pays`` reads each variant's *measured* acceptance length.
"""
from __future__ import annotations

import math

from inproc.errors import UsageError
from inproc.sweep.pays import NO_SPECULATION
from inproc.sweep.plan import Variant, split_values

ACCEPTANCE_FLAG = "--acceptance"  # inproc run's flag that forces the mean acceptance length


def parse_acceptance(text: str) -> tuple[str, ...]:
    """``1.5,2,2.5`` -> ('1.5', '2', '2.5'): each a number >= 1 (the bonus token included), each once."""
    values = split_values(text, f"--acceptance {text}")
    for v in values:
        try:
            x = float(v)
        except ValueError:
            x = math.nan
        if not math.isfinite(x) or x < 1:
            raise UsageError(f"Bad --acceptance value {v!r}: a mean acceptance length is a number >= 1 "
                             "(1 + accepted drafts per verify step), e.g. --acceptance 1.5,2,2.5.")
    twice = next((v for i, v in enumerate(values) if float(v) in map(float, values[:i])), None)
    if twice is not None:
        raise UsageError(f"Bad --acceptance: the value {twice!r} is given twice. Each variant is measured once.")
    return values


def parse_at(value: float | None) -> float | None:
    """``--at L``: the acceptance length the speedup is read at (>= 1)."""
    if value is not None and not (math.isfinite(value) and value >= 1):
        raise UsageError(f"Bad --at {value:g}: an acceptance length is a number >= 1, e.g. --at 2.5.")
    return value


def no_speculation(keys: tuple[str, ...], label: str, profile: str) -> Variant:
    """The variant without speculation: ``keys`` (the profile's speculation arguments) removed."""
    if not keys:
        raise UsageError(f"{profile} does not use speculative decoding (no {label} speculation argument in its "
                         "[engine_args]): --acceptance and --break-even compare speculation against none.")
    sets = tuple(f"!{k}" for k in keys)
    return Variant(0, sets, NO_SPECULATION, len(sets))


def speculation_variants(base: Variant, acceptance: tuple[str, ...], varied: tuple[Variant, ...]) -> tuple[Variant, ...]:
    """The variant without speculation first, then each forced length crossed with the --vary variants
    (lengths slowest), or the --vary variants as they are; numbered from 1."""
    out = [Variant(1, base.sets, base.tag, base.tagged)]
    for value in acceptance or (None,):
        for v in varied or (Variant(0, ()),):
            if value is None:
                out.append(Variant(len(out) + 1, v.sets, v.tag, v.tagged, v.flags))
            else:
                out.append(Variant(len(out) + 1, v.sets, f"acceptance={value}", 0, v.flags + (ACCEPTANCE_FLAG, value)))
    return tuple(out)
