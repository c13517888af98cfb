"""One measuring session: profile + settings -> engine -> plan -> warm-up -> results file.

This is the library call behind ``inproc run`` and ``inproc cell``; the CLI only parses
flags, calls :func:`run_matrix`, and renders. The run record's header is assembled here,
once (:func:`new_record`).
"""
from __future__ import annotations

import dataclasses
import json
import secrets
import time
from pathlib import Path

import inproc
from inproc import engines
from inproc.engines import cuda
from inproc.engines.base import version_note
from inproc.errors import UsageError
from inproc.measure.loops import LoopSettings
from inproc.plan.matrix import MatrixPlan, check_contexts, make_plan
from inproc.plan.prompts import PromptFactory
from inproc.plan.shard import Shard, plan_id, planned_entries, shard_plan
from inproc.plan.settings import MatrixSettings
from inproc.profiles.spec import Profile
from inproc.record.damage import require_raw
from inproc.record.io import load_results
from inproc.record.schema import EngineRecord, Machine, ProfileRef, RunPlan, RunRecord, ShardRef
from inproc.run.cell import warm_up
from inproc.run.driver import Driver
from inproc.run.interrupt import RunInterrupted, graceful_sigint
from inproc.run.profiling import DebugSettings
from inproc.run.progress import Progress, QuietSink, Sink
from inproc.run.runner import RunContext, Runner
from inproc.run.watchdog import StepTimeout
from inproc.telemetry.busy import BusyCheck
from inproc.telemetry.metadata import collect_metadata
from inproc.types import LaunchSpec
from inproc.telemetry.sampler import DEFAULT_HZ, Telemetry, open_telemetry


#: A resumed run's note begins so, followed by when it was resumed.
RESUMED = "resumed"


def check_output_path(out: str | None, force: bool) -> None:
    if out and Path(out).exists() and not force:
        raise UsageError(f"Results file {out!r} exists. Pass --force to overwrite it, or --resume {out} to continue it.")


def profile_ref(profile: Profile) -> ProfileRef:
    return ProfileRef(profile.name, profile.path, profile.engine, profile.model, dict(profile.engine_args),
                      dict(profile.env), profile.hardware, profile.notes, profile.gpus, tuple(profile.overrides))


def _differing(mine: dict, stored: dict) -> list[str]:
    """Keys whose values differ once both are JSON (tuples and lists compare alike)."""
    mine, stored = json.loads(json.dumps(mine)), json.loads(json.dumps(stored))
    return [k for k in mine if mine[k] != stored.get(k)]


def resume_refusal(old: RunRecord, profile: Profile, settings: MatrixSettings) -> str:
    """Why a results file cannot be resumed with this profile and plan ("" when it can)."""
    keys = ("engine", "model", "engine_args", "overrides")
    mine, theirs = dataclasses.asdict(profile_ref(profile)), dataclasses.asdict(old.profile)
    if diff := _differing({k: mine[k] for k in keys}, theirs):
        return f"it was made from a different profile ({', '.join(diff)} differ)"
    if diff := _differing(dataclasses.asdict(settings), dataclasses.asdict(old.plan.settings)):
        return f"it was made with a different plan ({', '.join(diff)} differ)"
    return ""


def new_record(profile: Profile, plan: RunPlan, info, build_s: float, warmup_s: float, command: str,
               machine: Machine, old: RunRecord | None = None) -> RunRecord:
    """The whole header of a results file; a resumed run keeps the entries, notes and ``created`` of ``old``.

    ``created`` is the run's identity (a history dates the night by it, each cell file carries
    it): a resumed run keeps its first one, and its notes say when it was resumed.
    """
    engine = EngineRecord(info.name, info.version, info.model, info.dummy_weights, info.vocab_size, info.settings,
                          info.forward_source, round(build_s, 3), round(warmup_s, 3))
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    rec = RunRecord(tool={"name": "inproc", "version": inproc.__version__}, created=now,
                    command=command, profile=profile_ref(profile), plan=plan, engine=engine, capacity=info.capacity,
                    machine=machine, placement=info.placement)
    if old is not None:
        rec = dataclasses.replace(rec, created=old.created, prefill=old.prefill, decode=old.decode,
                                  notes=old.notes + (f"{RESUMED} {now}",), measure_s=old.measure_s)
    return rec


def _entries_to_measure(plan: MatrixPlan, old: RunRecord | None) -> int:
    done_prefill = {e.context for e in old.prefill} if old else set()
    done_cells = {e.key for e in old.decode} if old else set()
    return (sum(1 for c in plan.prefill_contexts if c not in done_prefill)
            + sum(1 for c in plan.cells if not c.pre_status and c.key not in done_cells))


def _checked_shard(shard: Shard | None, settings: MatrixSettings, seed: int | None, old: RunRecord | None) -> Shard | None:
    """The shard to run: the one given, or a resumed file's own; a mismatch or a shard without a seed is refused."""
    before = Shard(old.shard.index, old.shard.count) if old is not None and old.shard else None
    if old is not None and shard is not None and shard != before:
        was = f"shard {before.label}" if before else "the whole plan"
        raise UsageError(f"Cannot resume with --shard {shard.label}: the results file measured {was}.")
    shard = shard or before
    if shard is None or old is not None:
        return shard
    if seed is None:
        raise UsageError(f"--shard {shard.label} needs --seed N: every shard of one plan must use the same prompt "
                         "seed (give all shards the same --seed, e.g. --seed 1234).")
    entries = planned_entries(settings.prefill_list, tuple((L, C) for L in settings.contexts for C in settings.concurrency
                                                           if settings.runs_cell(L, C)))
    if shard.count > entries:
        raise UsageError(f"Bad --shard {shard.label}: the plan has {entries} entries, so at most {entries} shards "
                         f"can each measure one (use N ≤ {entries}).")
    return shard


def _checked_start(profile: Profile, settings: MatrixSettings, out: str | None, seed: int | None,
                   resume: str | None, force: bool, shard: Shard | None) -> tuple[RunRecord | None, str | None, int, Shard | None]:
    """(the record resumed, the output path, the seed, the shard) once every input is checked, before any build."""
    old = None
    if resume:
        old = load_results(resume)
        require_raw(old, "--resume")  # a resumed file is written whole again
        why = resume_refusal(old, profile, settings)
        if why:
            raise UsageError(f"Cannot resume {resume!r}: {why}. Start a new run with --out, or use the same profile and flags.")
        out = resume
    else:
        check_output_path(out, force)
    shard = _checked_shard(shard, settings, seed, old)
    seed = old.plan.seed if old is not None else seed
    limit = engines.get(profile.engine).declared_max_len(profile.model, dict(profile.engine_args))
    if limit:
        check_contexts(settings.contexts + settings.prefill_list, limit, "profile's max length")
    return old, out, seed if seed is not None else secrets.randbits(31), shard


def _build(profile: Profile, launch: LaunchSpec, sink: Sink, telemetry: Telemetry | None):
    """The engine and its build seconds; a multi-node head says first what it waits for. The steal read over
    the build is the run's steady steal: said once, and each cell's judged beyond it (``telemetry``)."""
    placement = engines.head_placement(launch)
    if placement.nodes is not None and placement.nodes > 1:
        sink(f"placement: {placement.describe()}; building the head (node 0), which waits for node ranks "
             f"1..{placement.nodes - 1}: run `inproc worker {profile.path or profile.name} --node-rank R` on each")
    busy = BusyCheck()  # judged over the build: one warning before the matrix, and the steady steal's note
    t_build = time.perf_counter()
    engine = engines.build_engine(launch)
    build_s = time.perf_counter() - t_build
    busy.read()
    if (why := busy.warning()) is not None:
        sink(f"warning: {why}")
    if (note := busy.steal_note()) is not None:
        sink(note)
    if telemetry is not None:
        telemetry.steady_steal.build_share = busy.steal_share
    return engine, build_s


def _shard_ref(full: MatrixPlan, plan: MatrixPlan, shard: Shard | None) -> ShardRef | None:
    if shard is None:
        return None
    return ShardRef(shard.index, shard.count, plan_id(full), plan.prefill_contexts,
                    tuple((c.context, c.concurrency) for c in plan.cells))


def debug_launch(profile: Profile, debug: DebugSettings) -> LaunchSpec:
    """The profile's launch, with what the engine needs at build to profile later; CUDA checked first."""
    if debug.nvtx:
        cuda.check_for("--nvtx")
    if debug.profile == "cuda":
        cuda.check_for("--profile cuda")
    launch = profile.launch
    if debug.profile is None:
        return launch
    Path(debug.profile_dir).mkdir(parents=True, exist_ok=True)
    extra = engines.get(profile.engine).profiler_args(debug.profile, debug.profile_dir, debug.profile_with_stack)
    return dataclasses.replace(launch, engine_args={**launch.engine_args, **extra})


def run_matrix(profile: Profile, settings: MatrixSettings, *, out: str | None, seed: int | None = None,
               resume: str | None = None, force: bool = False, command: str = "", progress: Sink | None = None,
               telemetry_hz: float | None = DEFAULT_HZ, loops: LoopSettings = LoopSettings(),
               debug: DebugSettings = DebugSettings(), shard: Shard | None = None,
               step_timeout: StepTimeout = StepTimeout(), retry_disturbed: int = 0) -> RunRecord:
    """Build the engine, plan the matrix (or its shard), warm up, measure it, and keep the results file current.

    ``debug``: profiler, NVTX ranges and breakpoint (``inproc.run.profiling``); no figure depends on it.
    ``shard``: measure only that part of the plan (``inproc.plan.shard``); ``inproc merge`` joins the parts.
    ``step_timeout``: the step watchdog (``inproc.run.watchdog``): a hung step saves the file and exits 3.
    ``retry_disturbed``: a disturbed decode cell is measured again up to this many times (``inproc.run.runner``).
    """
    sink = progress if progress is not None else QuietSink()
    old, out, seed, shard = _checked_start(profile, settings, out, seed, resume, force, shard)
    launch = dataclasses.replace(debug_launch(profile, debug), anatomy=settings.anatomy)  # checks CUDA where a debug flag needs it
    telemetry = open_telemetry(hz=telemetry_hz) if telemetry_hz else None  # checks the rate first
    engine = runner = None
    try:
        engine, build_s = _build(profile, launch, sink, telemetry)
        full = make_plan(settings, engine.info.capacity, seed)
        plan = shard_plan(full, shard) if shard else full
        info = engine.info
        if untested := version_note(engines.get(info.name), info.version):
            sink(f"warning: {untested}")
        with graceful_sigint() as stop:
            prompts = PromptFactory(info.vocab_size, seed, info.special_token_ids)
            batch = min(max(settings.concurrency), info.capacity.max_num_seqs)
            warmup_s = warm_up(Driver(engine, should_stop=stop), engine, prompts, batch)
            machine = Machine(**collect_metadata(software=engines.software(), host_bandwidth=True))
            record = new_record(profile, RunPlan(settings, seed, loops, telemetry_hz), info, build_s, warmup_s, command,
                                machine, old)
            record = dataclasses.replace(record, shard=_shard_ref(full, plan, shard),
                                         notes=record.notes + ((untested,) if untested else ()))
            ctx = RunContext(launch, out, Progress(_entries_to_measure(plan, old), sink), should_stop=stop, debug=debug,
                             step_timeout=step_timeout, retry_disturbed=retry_disturbed)
            runner = Runner(ctx, engine, plan, record, telemetry)
            try:
                return runner.run()
            except (RunInterrupted, KeyboardInterrupt):
                runner.add_note("interrupted (Ctrl-C); resume with --resume")
                runner.save()
                raise RunInterrupted(f"interrupted; everything measured so far is saved in {out}") from None
    finally:
        if runner is not None and runner.writer is not None:
            runner.writer.close()
        current = runner.engine if runner else engine
        if current is not None:
            current.shutdown()
        if telemetry is not None:
            telemetry.close()
