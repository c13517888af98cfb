"""``inproc merge``: the shards of one plan (``inproc run --shard I/N``) put together as one results file.

Shards are refused, each with one line, when they are not shards, belong to different
plans (settings, seed, profile, or the engine capacity the plan was made against),
engines or device models, overlap (one shard twice, or an entry in two files), miss a
shard, or did not finish. The split is recomputed from the plan (``inproc.plan.shard``)
and every file must hold exactly its part. The merged record is an ordinary run record:
the first shard's header, every entry once in plan order, the shards' measuring time
summed, and each shard's file, command and machine under ``merged_from``.
"""
from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from typing import Sequence

from inproc.errors import UsageError
from inproc.plan.matrix import MatrixPlan, make_plan
from inproc.plan.shard import Entry, assign, plan_id
from inproc.record.schema import MergedShard, RunRecord

Shards = Sequence[tuple[str, RunRecord]]  # (path, record) of each file given


def device_model(rec: RunRecord) -> str:
    """What the figures were measured on: the GPU models, or the CPU model on a machine without GPUs."""
    gpus = Counter(rec.machine.gpu_names)
    if gpus:
        return ", ".join(f"{n} × {name}" for name, n in sorted(gpus.items()))
    return f"CPU {rec.machine.cpu_model or 'not recorded'}"


def _differing(a: object, b: object) -> list[str]:
    da, db = json.loads(json.dumps(dataclasses.asdict(a))), json.loads(json.dumps(dataclasses.asdict(b)))
    return [k for k in da if da[k] != db.get(k)]


def _check_shards(shards: Shards) -> None:
    if not shards:
        raise UsageError("No shards given. Give every results file of one `inproc run --shard I/N` plan.")
    for path, rec in shards:
        if rec.shard is None:
            raise UsageError(f"{path} is not a shard (made without --shard): merge takes the N files of one "
                             "`inproc run --shard I/N` plan.")


def _check_same_plan(shards: Shards) -> None:
    """Same shard count, settings, seed, profile, engine and device model as the first file."""
    (p0, r0), n0 = shards[0], shards[0][1].shard.count
    for path, rec in shards[1:]:
        why = ""
        if rec.shard.count != n0:
            why = f"{p0} is shard {r0.shard.label}, {path} is shard {rec.shard.label}"
        elif diff := _differing(rec.plan.settings, r0.plan.settings):
            why = f"their matrix settings differ ({', '.join(diff)})"
        elif rec.plan.seed != r0.plan.seed:
            why = f"their seeds differ ({r0.plan.seed} in {p0}, {rec.plan.seed} in {path})"
        elif (rec.profile.model, dict(rec.profile.engine_args)) != (r0.profile.model, dict(r0.profile.engine_args)):
            why = "they were made from different profiles (model or engine arguments differ)"
        elif rec.shard.plan_id != r0.shard.plan_id:
            why = f"their engines hold different capacity, so the plans differ ({_capacity(r0)} vs {_capacity(rec)})"
        if why:
            raise UsageError(f"Shards of different plans: {p0} and {path}: {why}. Merge the shards of one plan.")
        if (rec.engine.name, rec.engine.version) != (r0.engine.name, r0.engine.version):
            raise UsageError(f"Shards from different engines: {p0} ran {r0.engine.name} {r0.engine.version}, {path} ran "
                             f"{rec.engine.name} {rec.engine.version}. Merge shards of one engine.")
        if device_model(rec) != device_model(r0):
            raise UsageError(f"Shards from different GPU models: {p0} ran on {device_model(r0)}, {path} on "
                             f"{device_model(rec)}. Merge shards measured on the same hardware.")


def _capacity(rec: RunRecord) -> str:
    cap = rec.capacity
    return f"{cap.num_blocks:,} blocks of {cap.block_size}, max_num_seqs {cap.max_num_seqs}"


def _check_complete(shards: Shards) -> None:
    """Each shard once, none missing, each finished."""
    seen: dict[int, str] = {}
    for path, rec in shards:
        if rec.shard.index in seen:
            raise UsageError(f"Overlapping shards: {seen[rec.shard.index]} and {path} are both shard {rec.shard.label}. "
                             "Give each shard once.")
        seen[rec.shard.index] = path
    count = shards[0][1].shard.count
    missing = [i for i in range(1, count + 1) if i not in seen]
    if missing:
        given = ", ".join(f"{i}/{count}" for i in sorted(seen))
        raise UsageError(f"Shard {missing[0]}/{count} is missing (given: {given}). Merge needs all {count} shards.")
    for path, rec in shards:
        if not rec.finished:
            raise UsageError(f"{path} (shard {rec.shard.label}) did not finish. Complete it with its `inproc run` "
                             f"command plus --resume {path}, then merge.")


def _entries(rec: RunRecord) -> list[Entry]:
    return ([Entry("prefill", e.context) for e in rec.prefill]
            + [Entry("decode", e.context, e.concurrency) for e in rec.decode])


def _check_parts(shards: Shards, full: MatrixPlan) -> None:
    """No entry in two files, and every file holds exactly its part of the split."""
    owner: dict[Entry, str] = {}
    for path, rec in shards:
        for entry in _entries(rec):
            if entry in owner:
                raise UsageError(f"Overlapping shards: {entry.key} is in {owner[entry]} and in {path}. "
                                 "Each entry belongs to one shard; re-run the shard that should not hold it.")
            owner[entry] = path
    if plan_id(full) != shards[0][1].shard.plan_id:
        raise UsageError(f"{shards[0][0]}: its plan fingerprint does not match its settings (a file edited, or written "
                         "by another inproc version). Merge files written by one inproc.")
    parts = assign(full, shards[0][1].shard.count)
    for path, rec in shards:
        mine, held = set(parts[rec.shard.index - 1]), set(_entries(rec))
        if held != mine:
            odd = sorted(e.key for e in held ^ mine)
            raise UsageError(f"{path} (shard {rec.shard.label}) does not hold its part of the plan (differs in: "
                             f"{', '.join(odd[:4])}). Re-run that shard.")


def merge_shards(shards: Shards, command: str = "") -> RunRecord:
    """One record from every shard of one plan; a bad set of shards is a one-line :class:`UsageError`."""
    _check_shards(shards)
    _check_same_plan(shards)
    _check_complete(shards)
    shards = sorted(shards, key=lambda s: s[1].shard.index)
    first = shards[0][1]
    full = make_plan(first.plan.settings, first.capacity, first.plan.seed)
    _check_parts(shards, full)
    prefill = {e.context: e for _, r in shards for e in r.prefill}
    decode = {(e.context, e.concurrency): e for _, r in shards for e in r.decode}
    notes = [f"shard {r.shard.label}: {n}" for _, r in shards for n in r.notes]
    merged = tuple(MergedShard(r.shard.index, r.shard.count, path, r.created, r.command, r.measure_s, r.machine)
                   for path, r in shards)
    return dataclasses.replace(
        first, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), command=command, shard=None, merged_from=merged,
        prefill=tuple(prefill[c] for c in full.prefill_contexts),
        decode=tuple(decode[(c.context, c.concurrency)] for c in full.cells), finished=True,
        notes=(f"merged from {len(shards)} shards of plan {first.shard.plan_id}", *notes),
        measure_s=sum(r.measure_s for _, r in shards), schema_version=0)
