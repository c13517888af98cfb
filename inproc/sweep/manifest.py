"""``sweep.json``: what a sweep set out to run and where each variant stands.

The raw data are the variants' results files; this file only plans and indexes them, so
a summary is always derived from those files when they are loaded. It is rewritten
atomically before and after every variant, so a killed sweep leaves a valid file whose
``running`` variant is simply not finished.

Version history (``sweep_version``):
  1 — 2026-12-02: first format. Top level: sweep_version, tool, created, command,
      finished, notes, plan {profile, profile_name, engine, vary [{key, values}], zip,
      run_args, seed, launch {model, engine_args, env}}, variants [{index, sets, name,
      file, log, status, error, returncode, wall_s, started, attempts}].
      2026-12-03, same version, keys a reader without them takes as empty: plan.graph_sizes
      [{name, sizes}] (``--graph-sizes``: one list per variant group), a variant's tag and tagged.
      2026-12-06, same version, keys a reader without them takes as empty: plan.acceptance [values],
      plan.break_even, plan.at (``--acceptance``, ``--break-even``, ``--at``), a variant's flags (``inproc
      run`` flags of its own: ``--acceptance L``).
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from inproc.errors import UsageError
from inproc.record.io import check_version, read_json, write_text_atomic
from inproc.sweep.plan import Variant, Vary

SWEEP_FILE = "sweep.json"
SWEEP_VERSION = 1

# A variant's status. A failed variant is data (asv's "!"): --resume keeps it.
PENDING, RUNNING, DONE, FAILED, INTERRUPTED = "pending", "running", "done", "failed", "interrupted"
STATUSES = (PENDING, RUNNING, DONE, FAILED, INTERRUPTED)
#: Statuses --resume leaves as they are; the others are run (again).
SETTLED = (DONE, FAILED)


@dataclass(frozen=True)
class SweepPlan:
    """What every variant shares: the profile, the --vary keys, the ``inproc run`` flags, the prompt seed."""

    profile: str  # the profile file, absolute
    profile_name: str
    engine: str
    varies: tuple[Vary, ...]
    zipped: bool
    run_args: tuple[str, ...]  # flags every child `inproc run` gets (cells, window, fixed --set ...)
    seed: int  # one seed for every variant: the same prompts in every engine
    # What the profile held when the sweep was planned (model, engine_args, env, fixed --set applied):
    # --resume refuses a profile file that changed since.
    launch: Mapping[str, object] = field(default_factory=dict)
    # --graph-sizes: (name, sizes) per list, in order; () none. "captured" with no sizes: the profile's own.
    graph_sizes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    acceptance: tuple[str, ...] = ()  # --acceptance: the forced lengths, one variant each
    break_even: bool = False  # a variant without speculation, and where speculation pays per cell
    at: float | None = None  # --at: the acceptance length the speedup is read at

    def differences(self, other: "SweepPlan") -> list[str]:
        """What differs between ``other`` and this plan, as the command line and profile name it."""
        mine, theirs = dataclasses.asdict(self), dataclasses.asdict(other)
        return [_WHAT.get(k, k) for k in mine if json.dumps(mine[k]) != json.dumps(theirs[k])]


_WHAT = {"profile": "profile file", "profile_name": "profile name", "varies": "--vary values", "zipped": "--zip",
         "run_args": "measuring flags", "seed": "--seed", "launch": "profile contents", "graph_sizes": "--graph-sizes lists",
         "acceptance": "--acceptance values", "break_even": "--break-even", "at": "--at"}


@dataclass(frozen=True)
class VariantRun:
    """One variant and what became of it."""

    variant: Variant
    status: str = PENDING
    error: str = ""  # one line, when failed or interrupted
    returncode: int | None = None  # the child's exit status (negative: killed by that signal)
    wall_s: float | None = None  # the child's wall time, start to exit
    started: str = ""
    attempts: int = 0  # child processes started for it (a resumed variant counts again)


@dataclass(frozen=True)
class Sweep:
    """The whole ``sweep.json``."""

    plan: SweepPlan
    runs: tuple[VariantRun, ...]
    command: str
    created: str
    tool: Mapping[str, str] = field(default_factory=dict)
    finished: bool = False
    notes: tuple[str, ...] = ()

    def replace_run(self, run: VariantRun) -> "Sweep":
        runs = tuple(run if r.variant.index == run.variant.index else r for r in self.runs)
        return dataclasses.replace(self, runs=runs)


def sweep_path(directory: str | os.PathLike) -> Path:
    return Path(directory) / SWEEP_FILE


def to_json(s: Sweep) -> dict[str, Any]:
    plan = dataclasses.asdict(s.plan)
    plan["vary"] = plan.pop("varies")
    plan["graph_sizes"] = [{"name": n, "sizes": list(sz)} for n, sz in s.plan.graph_sizes]
    plan["zip"] = plan.pop("zipped")
    return {
        "sweep_version": SWEEP_VERSION, "tool": dict(s.tool), "created": s.created, "command": s.command,
        "finished": s.finished, "notes": list(s.notes), "plan": plan,
        "variants": [_run_json(r) for r in s.runs],
    }


def _run_json(r: VariantRun) -> dict[str, Any]:
    v = r.variant
    return {"index": v.index, "sets": list(v.sets), "flags": list(v.flags), "tag": v.tag, "tagged": v.tagged, "name": v.name, "file": v.file, "log": v.log, "status": r.status,
            "error": r.error, "returncode": r.returncode, "wall_s": r.wall_s, "started": r.started,
            "attempts": r.attempts}


def write_sweep(directory: str | os.PathLike, s: Sweep) -> None:
    """Rewrite ``sweep.json`` atomically (temp file + ``os.replace``)."""
    write_text_atomic(sweep_path(directory), json.dumps(to_json(s), indent=1) + "\n")


def from_json(d: dict[str, Any]) -> Sweep:
    p = d["plan"]
    plan = SweepPlan(p["profile"], p["profile_name"], p["engine"],
                     tuple(Vary(v["key"], tuple(v["values"])) for v in p["vary"]), bool(p["zip"]),
                     tuple(p["run_args"]), int(p["seed"]), dict(p.get("launch") or {}),
                     tuple((str(g["name"]), tuple(int(x) for x in g["sizes"])) for g in p.get("graph_sizes") or ()),
                     tuple(str(a) for a in p.get("acceptance") or ()), bool(p.get("break_even")),
                     float(p["at"]) if p.get("at") is not None else None)
    runs = []
    for r in d["variants"]:
        if r["status"] not in STATUSES:
            raise ValueError(f"unknown variant status {r['status']!r}")
        variant = Variant(int(r["index"]), tuple(r["sets"]), str(r.get("tag") or ""), int(r.get("tagged") or 0),
                          tuple(r.get("flags") or ()))
        runs.append(VariantRun(variant, r["status"], r.get("error") or "",
                               r.get("returncode"), r.get("wall_s"), r.get("started") or "", int(r.get("attempts") or 0)))
    return Sweep(plan, tuple(runs), d.get("command", ""), d.get("created", ""), dict(d.get("tool") or {}),
                 bool(d.get("finished")), tuple(d.get("notes") or ()))


def load_sweep(directory: str | os.PathLike) -> Sweep:
    """Read ``DIR/sweep.json``; a missing, foreign or newer file is a one-line :class:`UsageError`."""
    p = sweep_path(directory)
    data = read_json(p, "sweep file", f"No {SWEEP_FILE} in {str(directory)!r}: not a sweep folder. 'inproc sweep --out DIR' makes one.")
    check_version(data, "sweep_version", SWEEP_VERSION, "sweep file", "", str(p))
    try:
        return from_json(data)
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{p}: not a sweep file ({type(e).__name__}: {e}).") from None
