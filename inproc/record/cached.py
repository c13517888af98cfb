"""Entries from a file's cached figures: what ``inproc.record.derive`` computed when the entry was
saved, taken as written because the file says today's definitions made them
(``definitions_version`` equals ``inproc.record.definitions.DEFINITIONS_VERSION``, a digest
of the code that derives them, so a changed definition is never served from the cache).

The raw records come with each entry all the same (a comparison's samples and the report's
charts read them); ``inproc report --rederive`` and any change of definitions derive every
figure again from them instead.
"""
from __future__ import annotations

from typing import Any, Sequence

from inproc.codec import known_fields
from inproc.measure.anatomy import AnatomyFigures
from inproc.measure.acceptance import AcceptanceFigures
from inproc.measure.figures import DecodeFigures, PrefillFigures
from inproc.measure.judge import Verdict
from inproc.measure.kv import KvUsage
from inproc.measure.slow import SlowFigures
from inproc.measure.trace import CellTrace
from inproc.plan.matrix import CellPlan
from inproc.record.schema import DecodeEntry, PrefillEntry
from inproc.telemetry.disturbed import Disturbance
from inproc.telemetry.figures import TelemetryFigures
from inproc.telemetry.trace import TelemetryTrace
from inproc.telemetry.window import WindowTelemetry


def _telemetry(d: dict[str, Any], trace: TelemetryTrace | None) -> WindowTelemetry | None:
    tel = d.get("telemetry")
    if trace is None or not tel or tel.get("figures") is None:
        return None
    throttle = tel.get("throttle") or {}
    disturbance = Disturbance.from_dict(tel["disturbance"]) if tel.get("disturbance") else None
    return WindowTelemetry(trace, TelemetryFigures.from_dict(tel["figures"]), throttle.get("passed"),
                           throttle.get("reason") or "", disturbance)


def _anatomy(d: dict[str, Any] | None) -> AnatomyFigures | None:
    if d is None:
        return None
    sizes = {int(k): int(v) for k, v in (d.get("batch_sizes") or {}).items()}  # JSON keys are strings
    return AnatomyFigures(**{**known_fields(AnatomyFigures, d), "batch_sizes": sizes})


def prefill_figures(d: dict[str, Any]) -> PrefillFigures:
    """The figures a prefill entry's row holds."""
    return PrefillFigures(**known_fields(PrefillFigures, d))


def decode_figures(d: dict[str, Any]) -> DecodeFigures | None:
    """The figures a decode cell's row holds (None: its window never held a step)."""
    if d.get("total_tok_s") is None:
        return None
    kv = KvUsage(**known_fields(KvUsage, d["kv"])) if d.get("kv") else None
    slow = SlowFigures(**known_fields(SlowFigures, d["slow"])) if d.get("slow") else None
    acceptance = AcceptanceFigures.from_dict(d["acceptance"]) if d.get("acceptance") else None
    return DecodeFigures(**{**known_fields(DecodeFigures, d), "anatomy": _anatomy(d.get("anatomy")), "kv": kv,
                            "slow": slow, "acceptance": acceptance})


def prefill_entry(d: dict[str, Any], verdict: Verdict, samples: Sequence[CellTrace],
                  telemetry: TelemetryTrace | None) -> PrefillEntry:
    """A measured prefill entry with the figures and verdict its file holds."""
    return PrefillEntry(d["context"], verdict, tuple(samples), prefill_figures(d), _telemetry(d, telemetry))


def decode_entry(d: dict[str, Any], cell: CellPlan, prompt_mode: str, reproduce: str, verdict: Verdict,
                 trace: CellTrace, telemetry: TelemetryTrace | None) -> DecodeEntry:
    """A measured decode cell with the figures and verdict its file holds (no figures: its window never held a step)."""
    return DecodeEntry(cell.context, cell.concurrency, verdict, cell.max_tokens, prompt_mode, trace, decode_figures(d),
                       cell.capacity, _telemetry(d, telemetry), None, reproduce)
