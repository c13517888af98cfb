"""Comparability: the keys two runs must share before a change between them means anything.

A key names one fact of a run: ``engine.version``, ``gpu.driver``,
``profile.engine_args.max-num-seqs``, ``plan.window_s``. Runs that differ in a key are not
comparable unless the user allows that key (``--allow-different KEY``, where KEY may also
be a prefix at a dot: ``profile.engine_args`` allows every engine argument).

Left out on purpose:
- ``plan.seed``: prompts are seeded randomly each run unless ``--seed`` is given, so nightly
  runs differ in it by design; a baseline of several seeds is what measures the prompts' share of the noise.
- the plan's contexts and concurrency levels: they decide which cells exist, and a cell
  present on one side only is reported as new or missing.
- the cold-prefill settings (``prefill_*``): compare judges decode cells only.
- the profile's name, path and ``--set`` strings: the same arguments from another file
  or given by ``--set`` are the same profile (its engine arguments are keys).
- capacity: the engine derives it; a change shows as cells whose status changed.

``spec.acceptance`` is kept apart from the engine arguments that carry it (vLLM's synthetic
fields, SGLang's simulate variables are not recorded among them): history allows every engine
argument to move between nights, and a forced acceptance must still be allowed by name.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Iterable, Sequence

from inproc.errors import UsageError
from inproc.plan.acceptance import Acceptance
from inproc.record.schema import RunRecord

#: The plan settings that change what a decode cell measures.
PLAN_KEYS = ("window_s", "window_steps", "max_output", "prompt_mode", "temperature", "suffix_tokens")
FIXED_KEYS = ("engine.name", "engine.version", "gpu.model", "gpu.driver", "cpu.model", "profile.model",
              *(f"plan.{k}" for k in PLAN_KEYS), "plan.loop_check", "plan.telemetry_hz", "spec.acceptance")
#: ``spec.acceptance`` of a speculative run whose acceptance was the engine's own.
NATURAL = "natural"
OPEN_KEYS = ("profile.engine_args", "profile.env")  # followed by .NAME


def run_keys(rec: RunRecord) -> dict[str, object]:
    """Every comparability key of one run, with its value (JSON-like)."""
    gpus = rec.machine.gpu_names
    keys: dict[str, object] = {
        "engine.name": rec.engine.name,
        "engine.version": rec.engine.version,
        "gpu.model": ", ".join(gpus) if gpus else "none",
        "gpu.driver": rec.machine.driver_version,
        "profile.model": rec.profile.model,
        **{f"plan.{k}": getattr(rec.plan.settings, k) for k in PLAN_KEYS},
        "plan.loop_check": dataclasses.asdict(rec.plan.loops),
        # The sampler is a thread of the measuring process: its rate is part of what was run.
        "plan.telemetry_hz": rec.plan.telemetry_hz,
    }
    if not gpus:  # a run on the CPU: the CPU is the device
        keys["cpu.model"] = rec.machine.cpu_model
    acceptance = spec_acceptance(rec)
    if acceptance is not None:
        keys["spec.acceptance"] = acceptance
    keys.update({f"profile.engine_args.{k}": v for k, v in rec.profile.engine_args.items()})
    keys.update({f"profile.env.{k}": v for k, v in rec.profile.env.items()})
    return json.loads(json.dumps(keys, default=str))  # tuples and lists compare alike


def spec_acceptance(rec: RunRecord) -> str | None:
    """How a run's draft acceptance was set: the forced value ("length 2.5"), :data:`NATURAL`, or None
    (no speculation). Forced against natural, or two forced values, is a difference to allow: it is the
    input that sets a speculative cell's speed."""
    forced = Acceptance.from_dict(rec.profile.acceptance)
    if forced is not None:
        return forced.describe()
    return NATURAL if rec.engine.settings.speculative_method else None


@dataclass(frozen=True)
class KeyDiff:
    """One key whose values differ between two groups of runs (each group: its distinct values)."""

    key: str
    base: tuple[str, ...]
    new: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.key} ({' | '.join(self.base)} vs {' | '.join(self.new)})"


def _shown(value: object) -> str:
    text = "(unset)" if value is None else value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 48 else text[:45] + "..."


def differing(base: Sequence[RunRecord], new: Sequence[RunRecord]) -> list[KeyDiff]:
    """Keys whose set of values differs between the two groups of runs, in key order."""
    kb, kn = [run_keys(r) for r in base], [run_keys(r) for r in new]
    names = sorted(set().union(*kb, *kn))
    out = []
    for name in names:
        vb = sorted({json.dumps(k.get(name), sort_keys=True) for k in kb})
        vn = sorted({json.dumps(k.get(name), sort_keys=True) for k in kn})
        if vb != vn:
            out.append(KeyDiff(name, tuple(_shown(json.loads(v)) for v in vb), tuple(_shown(json.loads(v)) for v in vn)))
    return out


def allowed(diff: KeyDiff, allow: Iterable[str]) -> bool:
    """Whether ``--allow-different`` covers this key (the key itself or a prefix of it at a dot)."""
    return any(diff.key == a or diff.key.startswith(a + ".") for a in allow)


def check_allow_keys(allow: Iterable[str]) -> tuple[str, ...]:
    """The ``--allow-different`` keys, each checked to name a key or a family of keys."""
    known = FIXED_KEYS + OPEN_KEYS
    for a in allow:
        ok = (a in known or any(k.startswith(a + ".") for k in known)
              or any(a.startswith(o + ".") and len(a) > len(o) + 1 for o in OPEN_KEYS))
        if not ok:
            raise UsageError(f"Unknown --allow-different key {a!r}. Keys: {', '.join(FIXED_KEYS)}, "
                             "profile.engine_args[.NAME], profile.env[.NAME] (or a prefix such as plan).")
    return tuple(allow)


def split_allowed(diffs: Sequence[KeyDiff], allow: Iterable[str]) -> tuple[list[KeyDiff], list[KeyDiff]]:
    """(differences the user allowed, differences that make the runs not comparable)."""
    allow = tuple(allow)
    return [d for d in diffs if allowed(d, allow)], [d for d in diffs if not allowed(d, allow)]


def check_one_profile(runs: Sequence[RunRecord], labels: Sequence[str], allow: Iterable[str], what: str) -> None:
    """Raise a one-line :class:`UsageError` when the runs of ``what`` differ in a key not allowed."""
    for rec, label in zip(runs[1:], labels[1:]):
        _, refused = split_allowed(differing(runs[:1], [rec]), allow)
        if refused:
            raise UsageError(f"{what} mixes runs of different profiles: {labels[0]} and {label} differ in "
                             f"{'; '.join(d.describe() for d in refused)}. A baseline folds runs of one profile; "
                             f"pass --allow-different {refused[0].key} (one per key) to fold them anyway.")
