"""What a finished run's exit code says about it: whether any cell was measured at all."""
from __future__ import annotations

from collections import Counter

from inproc.record.schema import RunRecord
from inproc.types import LOOPED, QUEUED, VALID

#: Exit code of ``inproc run`` / ``inproc cell`` when no cell was measured (1 is compare's
#: regression, 2 bad input, 3 a hung step).
NOTHING_MEASURED_EXIT_CODE = 4

#: Statuses of an entry that ran and kept its figures (Looped keeps its raw data).
MEASURED = (VALID, QUEUED, LOOPED)


def nothing_measured(record: RunRecord) -> str | None:
    """Why the run measured no cell ("2 Error, 1 Over capacity"), or None when at least one was measured.

    Every prefill and decode entry counts; Over capacity and Exceeds max model length are
    decided without running, so a run made only of them, or of Errors, has no figures.
    """
    entries = (*record.prefill, *record.decode)
    if any(e.status in MEASURED for e in entries):
        return None
    counts = Counter(e.status for e in entries)
    return ", ".join(f"{n} {status}" for status, n in counts.most_common()) or "the plan holds no cell"
