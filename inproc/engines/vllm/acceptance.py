"""A forced acceptance as vLLM's speculative config takes it: its synthetic rejection sampler.

vLLM (``vllm/config/speculative.py``) has ``rejection_sample_method = "synthetic"``, which
accepts each draft with a set probability instead of comparing it with the target model, so
the verify kernels run as on real text. It takes one of ``synthetic_acceptance_length`` (the
mean, bonus token included, in [1, k + 1]; vLLM turns it into per-position rates with its
minimum-variance schedule) or ``synthetic_acceptance_rates`` (k unconditional rates, non-increasing).
vLLM's CPU sampler refuses it at the first step ("Synthetic acceptance not supported with CPU
sampling"): there it exists only as configuration. Plain Python: nothing of vLLM is imported.
"""
from __future__ import annotations

import dataclasses
import json

from inproc.errors import UsageError
from inproc.types import LaunchSpec

SPEC_ARG = "speculative-config"
SYNTHETIC = "synthetic"
FIELDS = ("synthetic_acceptance_length", "synthetic_acceptance_rates")


def speculative_table(engine_args) -> dict | None:
    """The profile's speculative config as a table (a JSON string, as ``--set`` may give it, read); None: none."""
    spec = engine_args.get(SPEC_ARG)
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError:
            raise UsageError(f"Bad speculative-config {spec!r}: not a table, nor JSON.") from None
    return dict(spec) if spec else None


def synthetic_fields(acceptance) -> dict[str, object]:
    """The speculative config's fields that force ``acceptance``."""
    if acceptance.length is not None:
        return {"rejection_sample_method": SYNTHETIC, "synthetic_acceptance_length": float(acceptance.length)}
    return {"rejection_sample_method": SYNTHETIC, "synthetic_acceptance_rates": [float(r) for r in acceptance.rates]}


def force(launch: LaunchSpec, acceptance) -> LaunchSpec:
    """``launch`` with the synthetic fields in its speculative config; one line where the profile cannot take them."""
    spec = speculative_table(launch.engine_args)
    if not spec or not spec.get("method"):
        raise UsageError(f"--acceptance forces speculative decoding's acceptance, and this profile does not speculate "
                         f"(no {SPEC_ARG} with a method). Add one, e.g. --set {SPEC_ARG}.method=ngram "
                         f"--set {SPEC_ARG}.num_speculative_tokens=3, or leave --acceptance out.")
    k = spec.get("num_speculative_tokens")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise UsageError(f"--acceptance needs the profile's draft count: state {SPEC_ARG}.num_speculative_tokens "
                         f"(got {k!r}); vLLM may otherwise read it from the draft model at build.")
    acceptance.check_drafts(k, f"{SPEC_ARG}.num_speculative_tokens")
    table = {key: v for key, v in spec.items() if key not in FIELDS}  # the forced value replaces the profile's own
    table.update(synthetic_fields(acceptance))
    return dataclasses.replace(launch, engine_args={**launch.engine_args, SPEC_ARG: table})
