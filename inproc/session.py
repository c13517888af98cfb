"""One measuring session: profile + settings -> engine -> plan -> results file.

This is the library call behind ``inproc run`` and ``inproc cell``; the CLI only parses
flags, calls :func:`run_matrix`, and renders.
"""
from __future__ import annotations

import json
import secrets
import time
from dataclasses import asdict
from pathlib import Path

from inproc.engines import build_engine
from inproc.telemetry import DEFAULT_HZ, collect_metadata, open_telemetry
from inproc.errors import UsageError
from inproc.interrupt import RunInterrupted, graceful_sigint
from inproc.loops import LoopSettings
from inproc.plan import check_contexts, make_plan
from inproc.profile import MatrixSettings, Profile
from inproc.results import RunRecord, load_results
from inproc.runner import Progress, RunContext, Runner, new_record


def declared_max_len(profile: Profile) -> int | None:
    """The model's maximum length as the profile states it (max-model-len, or config.json)."""
    for key in ("max-model-len", "context-length"):
        if key in profile.engine_args:
            return int(profile.engine_args[key])
    cfg = Path(profile.model) / "config.json"
    if cfg.is_file():
        value = json.loads(cfg.read_text()).get("max_position_embeddings")
        return int(value) if value else None
    return None




def check_output_path(out: str | None, force: bool) -> None:
    if out and Path(out).exists() and not force:
        raise UsageError(f"Results file {out!r} exists. Pass --force to overwrite it, or --resume {out} to continue it.")


def _differing(mine: dict, stored: dict) -> list[str]:
    """Keys of ``mine`` whose value differs from ``stored``'s once both are JSON (tuples read back as lists)."""
    mine = json.loads(json.dumps(mine))
    return [k for k in mine if mine[k] != stored.get(k)]


def _same_run(old: RunRecord, profile: Profile, settings: MatrixSettings) -> str:
    """Why a results file cannot be resumed with this profile and plan ("" when it can)."""
    mine = {"engine": profile.engine, "model": profile.model, "engine_args": profile.engine_args,
            "overrides": list(profile.overrides)}
    if diff := _differing(mine, old.profile):
        return f"it was made from a different profile ({', '.join(diff)} differ)"
    if diff := _differing(asdict(settings), old.plan):
        return f"it was made with a different plan ({', '.join(diff)} differ)"
    return ""


def run_matrix(profile: Profile, settings: MatrixSettings, *, out: str | None, seed: int | None = None,
               resume: str | None = None, force: bool = False, command: str = "", progress: Progress = lambda s: None,
               telemetry_hz: float | None = DEFAULT_HZ, loops: LoopSettings = LoopSettings()) -> RunRecord:
    """Build the engine, plan the matrix, measure it, and keep the results file current."""
    old = None
    if resume:
        old = load_results(resume)
        why = _same_run(old, profile, settings)
        if why:
            raise UsageError(f"Cannot resume {resume!r}: {why}. Start a new run with --out, or use the same profile and flags.")
        seed, out = old.plan["seed"], resume
    else:
        check_output_path(out, force)
    limit = declared_max_len(profile)
    if limit:
        check_contexts(settings.contexts + settings.prefill_list, limit, "profile's max length")
    seed = seed if seed is not None else secrets.randbits(31)
    telemetry = open_telemetry(hz=telemetry_hz) if telemetry_hz else None  # checks the rate first
    try:
        t_build = time.perf_counter()
        engine = build_engine(profile)
        build_s = time.perf_counter() - t_build
    except BaseException:
        if telemetry is not None:
            telemetry.close()
        raise
    runner = None
    try:
        plan = make_plan(settings, engine.info.capacity, seed)
        record = new_record(profile, plan, engine, command, collect_metadata())
        record.engine["build_s"] = round(build_s, 3)
        record.plan["loop_check"] = asdict(loops)
        record.plan["telemetry_hz"] = telemetry_hz
        if old is not None:
            record.prefill, record.decode, record.notes = old.prefill, old.decode, old.notes + ["resumed"]
        with graceful_sigint() as stop:
            ctx = RunContext(profile, out, progress, should_stop=stop, loops=loops, live=getattr(progress, "live", False))
            runner = Runner(ctx, engine, plan, record, telemetry)
            try:
                return runner.run()
            except (RunInterrupted, KeyboardInterrupt):
                record.notes.append("interrupted (Ctrl-C); resume with --resume")
                runner.save()
                raise RunInterrupted(f"interrupted; everything measured so far is saved in {out}") from None
    finally:
        (runner.engine if runner else engine).shutdown()
        if telemetry is not None:
            telemetry.close()
