"""The sizes file: the lists ``inproc graphs`` costed, for ``inproc sweep --graph-sizes FILE`` to measure.

JSON, ``kind`` "inproc-graph-sizes", ``version`` 1: the engine, the results files read, the
weight, and per list its name (``captured``, ``suggested``, ``sizes-1``…), its sizes and the
padded tokens and steps without a graph it costs on the steps read. The sweep builds one
engine per list and measures it; the figures here are what the arithmetic predicts.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from inproc.errors import UsageError
from inproc.graphs.analysis import CAPTURED, SUGGESTED, GraphsAnalysis
from inproc.record.io import read_json

KIND, VERSION = "inproc-graph-sizes", 1
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class NamedList:
    """A list of capture sizes with its name in the sizes file."""

    name: str
    sizes: tuple[int, ...]


def file_lists(a: GraphsAnalysis) -> tuple[NamedList, ...]:
    """The analysis's lists under their file names (a --sizes list is ``sizes-N``)."""
    out, given = [], 0
    for r in a.lists:
        if r.name in (CAPTURED, SUGGESTED):
            out.append(NamedList(r.name, r.sizes))
        else:
            given += 1
            out.append(NamedList(f"sizes-{given}", r.sizes))
    return tuple(out)


def sizes_json(a: GraphsAnalysis, engine: str) -> dict:
    lists = []
    for named, r in zip(file_lists(a), a.lists):
        lists.append({"name": named.name, "sizes": list(r.sizes), "padded_tokens": r.total.waste_tokens,
                      "steps_without_graph": r.total.eager_steps, "steps": r.total.steps})
    return {"kind": KIND, "version": VERSION, "engine": engine, "results": [r.path for r in a.runs],
            "weight": a.options.weight, "budget": a.budget, "lists": lists}


def sizes_file_text(a: GraphsAnalysis, engine: str) -> str:
    return json.dumps(sizes_json(a, engine), indent=1) + "\n"


def read_sizes_file(path: str | Path) -> tuple[str, tuple[NamedList, ...]]:
    """(engine, lists) of a sizes file; a missing or foreign file is one line naming it."""
    data = read_json(Path(path), "sizes file", f"No sizes file at {str(path)!r}. 'inproc graphs RESULTS --sweep-file PATH' writes one.")
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UsageError(f"{path}: not a sizes file (no \"kind\": \"{KIND}\"). 'inproc graphs RESULTS --sweep-file PATH' writes one.")
    if data.get("version") != VERSION:
        raise UsageError(f"{path}: sizes file version {data.get('version')!r}; this inproc reads version {VERSION}.")
    try:
        lists = tuple(NamedList(str(d["name"]), tuple(int(s) for s in d["sizes"])) for d in data["lists"])
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{path}: a damaged sizes file ({type(e).__name__}: {e}).") from None
    bad = next((n.name for n in lists if not _NAME.match(n.name)), None)
    if bad is not None or not lists:
        raise UsageError(f"{path}: a damaged sizes file (list name {bad!r}).")
    return str(data.get("engine") or ""), lists
