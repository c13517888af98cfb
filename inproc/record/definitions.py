"""The version of the definitions a results file's cached figures were derived by: a digest of their code.

A results file caches, per entry, what ``inproc.record.derive`` computes from the raw records
(figures, step anatomy, KV use, telemetry figures, the throttle check, the verdict), under
``definitions_version``; a loader takes them as written only when that equals
:data:`DEFINITIONS_VERSION` (``inproc.record.fromjson``). A number bumped by hand was
forgotten when a definition changed, and a stale figure was then served as today's. So the
version is the SHA-256 (first 16 hex digits) of the source text of every module that
computes a cached value: ``derive`` and the modules of ``inproc.measure``,
``inproc.telemetry``, ``inproc.plan.capacity`` (an over-capacity verdict's reason) and
``inproc.types`` (status names) that it reaches by import (``tests/record/test_definitions.py``
checks the list against the imports). Any edit to them, a comment included, makes every
older file derive its figures again once: a needless re-derivation costs time, a stale figure
costs the truth. Files written before this carry an integer and are derived again as well.
"""
from __future__ import annotations

import hashlib
from importlib import resources
from typing import Iterable

#: The modules whose code derives a cached value, as paths inside the ``inproc`` package.
DEFINING_MODULES = (
    "measure/acceptance.py", "measure/anatomy.py", "measure/figures.py", "measure/judge.py", "measure/kv.py", "measure/loops.py",
    "measure/metrics.py", "measure/peaks.py", "measure/slow.py", "measure/steps.py", "measure/trace.py",
    "plan/capacity.py", "record/derive.py",
    "telemetry/disturbed.py", "telemetry/figures.py", "telemetry/judge.py", "telemetry/metrics.py", "telemetry/nvml_ids.py",
    "telemetry/series.py", "telemetry/trace.py", "telemetry/window.py",
    "types.py", "drafts.py",
)


def definitions_digest(sources: Iterable[tuple[str, bytes]]) -> str:
    """The version of a set of definitions: the first 16 hex digits of the SHA-256 over each
    module's name and source text (in name order, each delimited, so no two sets read alike)."""
    h = hashlib.sha256()
    for name, text in sorted(sources):
        h.update(name.encode() + b"\0" + len(text).to_bytes(8, "little") + text)
    return h.hexdigest()[:16]


def _sources() -> list[tuple[str, bytes]]:
    package = resources.files("inproc")
    return [(name, package.joinpath(*name.split("/")).read_bytes()) for name in DEFINING_MODULES]


#: This inproc's definitions, read once at import (19 small files: about a millisecond).
DEFINITIONS_VERSION = definitions_digest(_sources())
