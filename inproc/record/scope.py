"""Where a run's engine ran and which part of its plan the file holds, to and from the results file's JSON.

Three top-level keys of schema 6 (history in ``inproc.record.migrate``): ``placement`` (the
engine's nodes and ranks), ``shard`` (the part of the plan an ``inproc run --shard I/N``
measured) and ``merged_from`` (the shards ``inproc merge`` made a file from).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from inproc.codec import known_fields
from inproc.record.schema import Machine, MergedShard, RunRecord, ShardRef
from inproc.types import Placement


def to_json(rec: RunRecord) -> dict[str, Any]:
    return {
        "placement": dataclasses.asdict(rec.placement) if rec.placement else None,
        "shard": dataclasses.asdict(rec.shard) if rec.shard else None,
        "merged_from": [dataclasses.asdict(m) for m in rec.merged_from],
    }


def from_json(d: dict[str, Any]) -> dict[str, Any]:
    """The RunRecord fields of the three keys (absent or null: not recorded, not a shard, not merged)."""
    return {"placement": _placement(d.get("placement")), "shard": _shard(d.get("shard")),
            "merged_from": tuple(_merged(m) for m in d.get("merged_from") or ())}


def _placement(d: dict[str, Any] | None) -> Placement | None:
    if not d:
        return None
    return Placement(**{**known_fields(Placement, d), "ranks": tuple(tuple(int(r) for r in node) for node in d.get("ranks") or ())})


def _shard(d: dict[str, Any] | None) -> ShardRef | None:
    if not d:
        return None
    return ShardRef(int(d["index"]), int(d["count"]), str(d["plan_id"]), tuple(int(c) for c in d.get("prefill") or ()),
                    tuple((int(L), int(C)) for L, C in d.get("cells") or ()))


def _merged(d: dict[str, Any]) -> MergedShard:
    return MergedShard(**{**known_fields(MergedShard, d), "machine": Machine(**known_fields(Machine, d.get("machine") or {}))})
