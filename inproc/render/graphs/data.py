"""``inproc graphs --format json``: every figure of the analysis, unrounded, for scripts."""
from __future__ import annotations

import json

import numpy as np

from inproc.graphs.analysis import GraphsAnalysis
from inproc.graphs.padding import ListCost


def _cost(c: ListCost) -> dict:
    return {"steps": c.steps, "tokens": c.tokens, "padded_tokens": c.waste_tokens, "waste_weighted": c.waste_weighted,
            "padding_share": c.waste_share, "steps_without_graph": c.eager_steps,
            "time_without_graph_s": c.eager_time_s, "time_s": c.time_s, "unused": list(c.unused)}


def _cells(a: GraphsAnalysis) -> list[dict]:
    out = []
    for i, c in enumerate(a.cells):
        seen, times = np.unique(c.counts, return_counts=True)
        out.append({"cell": c.label, "context": c.context, "concurrency": c.concurrency, "status": c.status,
                    "steps": c.steps, "left_out_prefill_steps": c.left_out, "source": c.source,
                    "counts_seen": {str(int(v)): int(n) for v, n in zip(seen, times)},
                    "lists": {r.name: _cost(r.cells[i]) for r in a.lists}})
    return out


def analysis_json(a: GraphsAnalysis, set_args: tuple[str, ...] = ()) -> dict:
    """The analysis as one JSON object (``set_args``: the --set overrides of the suggested list)."""
    cost = a.cost
    return {
        "results": [r.path for r in a.runs], "weight": a.options.weight, "budget": a.budget, "multiple_of": a.multiple_of,
        "max_size": a.options.max_size, "captured": list(a.captured) if a.captured is not None else None,
        "lists": [{"name": r.name, "sizes": list(r.sizes), **_cost(r.total)} for r in a.lists],
        "suggested": {"sizes": list(a.suggested.sizes), "set": list(set_args)},
        "shorter": {"sizes": list(a.shorter.sizes), **_cost(a.shorter.total)} if a.shorter else None,
        "curve": [{"k": k, "sizes": list(p.sizes), "waste_weighted": p.waste_weighted, "padded_tokens": p.waste_tokens}
                  for k, p in enumerate(a.curve, start=1)],
        "cells": _cells(a),
        "capture_cost": {"recorded": cost.recorded, "sizes": cost.sizes, "memory_bytes": cost.memory_bytes,
                         "seconds": cost.seconds, "build_s": cost.build_s, "per_size_is_estimate": True},
        "padding_check": {"checked": a.check.checked, "agree": a.check.agree, "first_miss": a.check.first_miss},
        "not_read": list(a.damaged), "notes": list(a.notes),
    }


def render_graphs_json(a: GraphsAnalysis, set_args: tuple[str, ...] = ()) -> str:
    return json.dumps(analysis_json(a, set_args), indent=1) + "\n"
