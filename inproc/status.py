"""Cell statuses, with the legend lines the report prints under the matrix."""
from __future__ import annotations

VALID = "Valid"
QUEUED = "Requests queued"
OVER_CAPACITY = "Over capacity"
EXCEEDS_MAX_LEN = "Exceeds max model length"
LOOPED = "Looped"
ERROR = "Error"
PENDING = "Pending"  # planned, not measured yet (a run in progress or interrupted)

ALL = (VALID, QUEUED, OVER_CAPACITY, EXCEEDS_MAX_LEN, LOOPED, ERROR, PENDING)

#: Statuses decided before a cell runs: the cell is never run.
NOT_RUN = (OVER_CAPACITY, EXCEEDS_MAX_LEN)

#: Statuses whose figures are shown as headline numbers in the matrix.
HEADLINE = (VALID, QUEUED)

LEGEND = {
    QUEUED: "Requests queued: the engine could not run all requests at once, so some waited in its queue "
    "(sampled from the scheduler at every step); the figures are kept and flagged.",
    OVER_CAPACITY: "Over capacity: not run because this many requests at this context would exceed "
    "the engine's KV cache (blocks counted as the engine allocates them).",
    EXCEEDS_MAX_LEN: "Exceeds max model length: the context plus at least one output token is more than "
    "the engine accepts; not run.",
    LOOPED: "Looped: the model kept repeating the same tokens, so the cell's figures are not shown "
    "(repetition inflates speculative-decoding acceptance); the reason names the requests, period and repeats, "
    "and the raw data stays in the results file.",
    ERROR: "Error: the engine raised inside this cell; the reason gives the message and the matrix went on.",
    PENDING: "Pending: planned but not measured yet.",
}
