"""``inproc kernels``' output: per trace the per-step breakdown the report shows for a cell; two traces compared.

Each trace is shown as the report shows a cell's kernel pass (``inproc.render.kernels``): ms per
step by category with its share, the kernels' sum beside the marks' own host time, the top kernels
and the top unmatched names, and how many device activities were filed to a step or not. Two
traces are compared as ``inproc compare`` compares two cells' passes
(:func:`inproc.compare.kernels.cell_change`, steps as the units).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from inproc.compare.kernels import KernelChange, describe
from inproc.kernels.filing import FiledTrace
from inproc.kernels.summary import KernelSummary, summarize
from inproc.render import kernels as k
from inproc.render.mdtable import table as md_table
from inproc.render.writers import markdown_table


@dataclass(frozen=True)
class TraceKernels:
    """One trace filed into steps, as shown: its label (the file), its summary, and the filing."""

    label: str
    summary: KernelSummary
    filed: FiledTrace

    @property
    def host_bound(self) -> bool:
        return k.host_bound(self.summary)


def of_trace(label: str, filed: FiledTrace) -> TraceKernels:
    """The trace's summary: every step a row, the marks' spans as the steps' own time."""
    steps = np.arange(filed.steps, dtype=np.int64)
    return TraceKernels(label, summarize(filed.table, filed.step_ns / 1e9, steps), filed)


def filing_line(t: TraceKernels) -> str:
    f = t.filed
    if t.summary.device != "cuda":
        return f"{t.label}: {f.steps} steps marked {f.mark!r}; CPU operators' self time (no device activity)"
    per = f.per_step_activities()
    lo, hi = (int(per.min()), int(per.max())) if per.size else (0, 0)
    spread = f"{lo}" if lo == hi else f"{lo}–{hi}"
    lost = f.unfiled_text() or "none unfiled"
    return f"{t.label}: {f.steps} steps marked {f.mark!r}; {f.filed} device activities filed ({spread} per step); {lost}"


def render_markdown(ts: list[TraceKernels], change: KernelChange | None) -> str:
    v = k.kernels_view(ts, "Trace")
    lines = ["# Kernels per step", "", k.intro(ts).replace("after the window", "of the trace")
             .replace("(Engine.step(), start to end)", "(each step mark's host span)"), "", markdown_table(v.table), ""]
    lines += ["Filing:", ""] + [f"- {filing_line(t)}" for t in ts]
    lines += [line for note in v.host_bound for line in ("", f"> **Host-bound:** {note}")]
    lines += ["", "Top kernels per step:", ""] + [f"- {label}: {line}" for label, line in v.top]
    if v.unmatched:
        lines += ["", "Names no rule matched (`other`), with their share:", ""] + [f"- {label}: {u}" for label, u in v.unmatched]
    if change is not None:
        lines += ["", f"## {ts[1].label} against {ts[0].label}", "", describe(change), "",
                  md_table(["Category", "Base (ms)", "New (ms)", "Change (ms) [interval]"], _change_rows(change))]
    lines += [""] + [f"- **{d.label}**: {d.text}" for d in v.definitions]
    return "\n".join(lines) + "\n"


def _change_rows(ch: KernelChange) -> list[list[str]]:
    return [[c.category + (" (named)" if c.named else ""), f"{c.base_ms:.3f}", f"{c.new_ms:.3f}",
             f"{c.delta_ms:+.3f} [{c.low_ms:+.3f}, {c.high_ms:+.3f}]"] for c in ch.categories]


def render_text(ts: list[TraceKernels], change: KernelChange | None) -> str:
    v = k.kernels_view(ts, "Trace")
    top, unmatched = dict(v.top), dict(v.unmatched)
    out = [f"Kernels: ms per step by category ({k.time_kind(ts)}, mean over each trace's marked steps)"]
    for t in ts:
        out += [f"  {t.label}: {k.category_parts(t) or 'no kernel'}; {k.sum_text(t)}",
                f"    {filing_line(t)}", f"    top: {top[t.label] or '–'}"]
        if u := unmatched.get(t.label):
            out.append(f"    unmatched: {u}")
    if change is not None:
        out += ["", f"{ts[1].label} against {ts[0].label}: {describe(change)}"]
        out += [f"  {c.category:<13} {c.base_ms:9.3f} → {c.new_ms:9.3f} ms  {c.delta_ms:+.3f} [{c.low_ms:+.3f}, "
                f"{c.high_ms:+.3f}]{'  named' if c.named else ''}" for c in change.categories]
    return "\n".join(out) + "\n"


def render_json(ts: list[TraceKernels], change: KernelChange | None) -> str:
    def one(t: TraceKernels) -> dict:
        f = t.filed
        return {"trace": t.label, "mark": f.mark, "device": t.summary.device, "steps": f.steps,
                "step_ms": (f.step_ns / 1e6).tolist(), "activities_per_step": f.per_step_activities().tolist(),
                "filed": f.filed, "unfiled": f.unfiled, "unfiled_outside": f.unfiled_outside,
                "unfiled_no_launcher": f.unfiled_no_launcher, "unfiled_ns": f.unfiled_ns,
                "ms_per_step_by_category": {c: v / 1e6 for c, v in t.summary.ns_by_category().items()},
                "top": [{"name": n, "category": c, "ms_per_step": ns / 1e6}
                        for n, c, ns in t.summary.top_names(limit=k.TOP_KERNELS)]}
    doc = {"format": 1, "traces": [one(t) for t in ts]}
    if change is not None:
        doc["change"] = {"diagnosis": describe(change), "test": change.test, "judged": change.judged,
                         "run_spread": change.run_spread, "named": [c.category for c in change.named],
                         "categories": [asdict(c) for c in change.categories]}
    return json.dumps(doc, indent=1) + "\n"
