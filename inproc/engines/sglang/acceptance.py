"""A forced acceptance as SGLang takes it: its simulated acceptance length, set in the environment.

SGLang (``sglang/srt/environ.py``, ``sglang/srt/speculative/spec_utils.py``) reads
``SGLANG_SIMULATE_ACC_LEN`` (the mean acceptance length, bonus token included; off when
negative), ``SGLANG_SIMULATE_ACC_METHOD`` (``match-expected``: each verify step accepts the
floor or the ceiling of the mean, weighted so the mean is exact; ``multinomial``: a rounded
normal draw) and ``SGLANG_SIMULATE_ACC_TOKEN_MODE`` (``fixed``: every accepted token is id 100,
which the loop check would call a loop; ``real-draft-token``: the draft's own tokens and the
target's bonus, EAGLE with top-k 1) once, when ``spec_utils`` is first imported: they must be
in the environment before the engine's modules load, which is where the profile's [env] goes.
SGLang takes a mean only: per-position rates are refused. Its DSpark worker refuses a mean
above 1 unless its verify schedule verifies all drafts (``SGLANG_RAGGED_VERIFY_MODE=static``).
Plain Python: nothing of SGLang is imported here (``check_applied`` reads it after the build).
"""
from __future__ import annotations

import dataclasses

from inproc.errors import UsageError
from inproc.types import LaunchSpec

LENGTH, METHOD, TOKEN_MODE = "SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE"
DEFAULTS = {METHOD: "match-expected", TOKEN_MODE: "real-draft-token"}  # the exact mean; real tokens, no fake loop


def draft_count(engine_args) -> int | None:
    """The verify width less the bonus token, as the profile states it: speculative-num-steps, else
    speculative-num-draft-tokens - 1; None when the profile leaves it to SGLang's start-up."""
    steps, tokens = engine_args.get("speculative-num-steps"), engine_args.get("speculative-num-draft-tokens")
    if isinstance(steps, int) and not isinstance(steps, bool):
        return steps
    return tokens - 1 if isinstance(tokens, int) and not isinstance(tokens, bool) else None


def force(launch: LaunchSpec, acceptance) -> LaunchSpec:
    """``launch`` with the simulate variables in its environment; one line where SGLang cannot take ``acceptance``."""
    args = launch.engine_args
    if not args.get("speculative-algorithm"):
        raise UsageError("--acceptance forces speculative decoding's acceptance, and this profile does not speculate "
                         "(no speculative-algorithm). Add one, e.g. --set speculative-algorithm=EAGLE, or leave "
                         "--acceptance out.")
    if acceptance.rates is not None:
        raise UsageError(f"Bad --acceptance-rates {acceptance.describe_rates()}: SGLang forces a mean acceptance length "
                         f"only ({LENGTH}); give --acceptance L instead.")
    k = draft_count(args)
    if k is None:
        raise UsageError("--acceptance needs the profile's draft count: state speculative-num-steps (or "
                         "speculative-num-draft-tokens); SGLang otherwise picks it at start-up.")
    acceptance.check_drafts(k, "speculative-num-steps")
    env = {**DEFAULTS, **launch.env, LENGTH: repr(float(acceptance.length))}  # the profile's method and mode stay
    return dataclasses.replace(launch, env=env)


def check_applied(launch: LaunchSpec) -> None:
    """After the build: SGLang read the forced length (its modules were not imported before the variable was set)."""
    wanted = launch.env.get(LENGTH)
    if wanted is None:
        return
    from sglang.srt.speculative import spec_utils

    if float(spec_utils.SIMULATE_ACC_LEN) != float(wanted):
        from inproc.engines.base import EngineBuildError

        raise EngineBuildError(f"SGLang read {LENGTH}={spec_utils.SIMULATE_ACC_LEN} when its modules loaded, not the "
                               f"forced {wanted}: they were imported before the environment was set.")
