"""Forced draft acceptance: the input side of speculative decoding's acceptance (``--acceptance``).

Speculative decoding's speed depends on how many drafts the target model accepts, and
that depends on the text. inproc's prompts are random token ids, on which a real model's
acceptance is undefined, so an engine's own benchmark knob forces it instead: vLLM's
synthetic rejection sampler, SGLang's simulated acceptance length. A forced acceptance is
one of two forms, as vLLM's speculative config takes them:

- a mean acceptance length ``L`` in [1, k + 1]: tokens a verify step yields per draft, the
  bonus token included (``--acceptance L``; ``[speculative] acceptance = L``);
- per-position *unconditional* rates ``r1 >= ... >= rk`` in [0, 1]: ``ri`` is the chance that
  the first i draft tokens are all accepted (``--acceptance-rates r1,...,rk``;
  ``[speculative] acceptance = [r1, ..., rk]``). Their mean length is ``1 + sum(ri)``.

``k`` is the profile's draft count; the engine adapter knows where a profile states it
(``EngineAdapter.force_acceptance``). Plain Python: no engine is imported here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from inproc.errors import UsageError


@dataclass(frozen=True)
class Acceptance:
    """A forced acceptance: exactly one of ``length`` (mean, bonus token included) or ``rates`` (unconditional, per position)."""

    length: float | None = None
    rates: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if (self.length is None) == (self.rates is None):
            raise UsageError("A forced acceptance is a mean length (--acceptance L) or per-position rates "
                             "(--acceptance-rates r1,...,rk), one of the two.")
        if self.length is not None and not (math.isfinite(self.length) and self.length >= 1):
            raise UsageError(f"Bad --acceptance {self.length!r}: a mean acceptance length counts the bonus token, "
                             "so it is at least 1 (at most the draft count + 1).")
        if self.rates is not None:
            _check_rates(self.rates)

    @property
    def mean_length(self) -> float:
        """The mean acceptance length this forces: ``length``, or ``1 + sum(rates)``."""
        return float(self.length) if self.length is not None else 1.0 + float(sum(self.rates or ()))

    def check_drafts(self, k: int, label: str) -> None:
        """One line unless this fits ``k`` draft tokens (``label``: the engine, for the message)."""
        if self.length is not None and self.length > k + 1:
            raise UsageError(f"Bad --acceptance {self.length:g}: with {k} draft tokens ({label}) the mean acceptance "
                             f"length is in [1, {k + 1}] (the bonus token included).")
        if self.rates is not None and len(self.rates) != k:
            raise UsageError(f"Bad --acceptance-rates {self.describe_rates()}: {len(self.rates)} rates for {k} draft "
                             f"tokens ({label}); give one rate per draft position.")

    def describe_rates(self) -> str:
        return ",".join(f"{r:g}" for r in self.rates or ())

    def describe(self) -> str:
        """How a person reads it: "length 2.5" or "rates 0.9,0.7,0.5 (length 3.1)"."""
        if self.length is not None:
            return f"length {self.length:g}"
        return f"rates {self.describe_rates()} (length {self.mean_length:.3g})"

    def to_dict(self) -> dict[str, object]:
        """The results file's form: ``{"length": L}`` or ``{"rates": [...]}``."""
        return {"length": self.length} if self.length is not None else {"rates": list(self.rates or ())}

    @classmethod
    def from_dict(cls, d: Mapping[str, object] | None) -> "Acceptance | None":
        if not d:
            return None
        rates = d.get("rates")
        return cls(length=float(d["length"])) if d.get("length") is not None else cls(rates=tuple(float(r) for r in rates))


def _check_rates(rates: Sequence[float]) -> None:
    shown = ",".join(f"{r:g}" for r in rates)
    if not rates:
        raise UsageError("Bad --acceptance-rates '': give one rate per draft position, e.g. 0.9,0.7,0.5.")
    bad = [r for r in rates if not (math.isfinite(r) and 0 <= r <= 1)]
    if bad:
        raise UsageError(f"Bad --acceptance-rates {shown}: each rate is a probability in [0, 1]; {bad[0]:g} is not.")
    rising = next((i for i in range(1, len(rates)) if rates[i] > rates[i - 1]), None)
    if rising is not None:
        raise UsageError(f"Bad --acceptance-rates {shown}: the rates are unconditional (rate i: the first i drafts "
                         f"all accepted), so they cannot rise; position {rising + 1} ({rates[rising]:g}) is above "
                         f"position {rising} ({rates[rising - 1]:g}).")


def parse_length(text: str) -> Acceptance:
    """``--acceptance L``: one number, at least 1."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"Bad --acceptance {text!r}: give the mean acceptance length, a number in [1, k + 1] "
                         "(k: the profile's draft tokens), e.g. --acceptance 2.5.") from None
    return Acceptance(length=value)


def parse_rates(text: str) -> Acceptance:
    """``--acceptance-rates r1,...,rk``: comma-separated probabilities, non-increasing."""
    try:
        rates = tuple(float(r) for r in str(text).split(","))
    except ValueError:
        raise UsageError(f"Bad --acceptance-rates {text!r}: give one rate per draft position, comma-separated "
                         "probabilities that do not rise, e.g. --acceptance-rates 0.9,0.7,0.5.") from None
    return Acceptance(rates=rates)


def from_flags(length: str | None, rates: str | None) -> Acceptance | None:
    """The two flags as one forced acceptance (None: neither given)."""
    if length is not None and rates is not None:
        raise UsageError("Give --acceptance L or --acceptance-rates r1,...,rk, not both.")
    if length is not None:
        return parse_length(length)
    return parse_rates(rates) if rates is not None else None


def from_profile(value: object, where: str) -> Acceptance:
    """``[speculative] acceptance``: a number (the mean length) or a list of rates."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return Acceptance(length=float(value))
        if isinstance(value, list) and all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in value):
            return Acceptance(rates=tuple(float(r) for r in value))
    except UsageError as e:
        raise in_profile(e, where) from None
    raise UsageError(f"{where}: [speculative] acceptance is a mean acceptance length (acceptance = 2.5) or per-position "
                     f"unconditional rates (acceptance = [0.9, 0.7, 0.5]); got {value!r}.")


def in_profile(error: UsageError, where: str) -> UsageError:
    """A flag's error about a value that came from the profile's [speculative] table, worded so."""
    text = str(error).replace("--acceptance-rates", "acceptance").replace("--acceptance", "acceptance")
    return UsageError(f"{where}: [speculative] {text}")


def flag_args(acceptance: Acceptance | None) -> list[str]:
    """The command-line flags that give ``acceptance`` again (a child's, a reproduce command's)."""
    if acceptance is None:
        return []
    if acceptance.length is not None:
        return ["--acceptance", repr(acceptance.length)]
    return ["--acceptance-rates", ",".join(repr(r) for r in acceptance.rates or ())]
