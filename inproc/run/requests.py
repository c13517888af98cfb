"""A decode cell's requests: those in flight, those finished, and their tokens filed from the steps' deltas.

Before the window opens, each step's deltas are filed at once (:meth:`CellRequests.file`): the window
opens on the first requests' first tokens. Inside it, a step is only held (:meth:`CellRequests.hold`)
and its finished requests taken, since they are refilled before the next step; the held deltas are
filed together every :data:`HELD_DELTAS` deltas and at the cell's end (:meth:`CellRequests.file_held`),
in warm code rather than one step at a time between two engine steps (``inproc.run.decode``).
"""
from __future__ import annotations

from inproc.measure.trace import RequestTrace
from inproc.types import StepResult

#: Deltas held before they are filed under their requests together (a few steps at C = 128, a few
#: hundred at C = 1; objects held this briefly die young, before the collector's older generations).
HELD_DELTAS = 1024


class CellRequests:
    """The requests of one decode cell, by id, and the window steps whose tokens are not filed yet."""

    def __init__(self) -> None:
        self.active: dict[str, RequestTrace] = {}
        self.done: list[RequestTrace] = []  # finished, in the order they finished
        self.by_id: dict[str, RequestTrace] = {}  # every request of the cell, for the tokens filed in bulk
        self.started = 0  # of the first C requests, those with a first token (counted until the window opens)
        self.held: list[tuple[int, StepResult]] = []
        self.held_deltas = 0

    def add(self, req: RequestTrace) -> None:
        self.active[req.request_id] = self.by_id[req.request_id] = req

    def file(self, res: StepResult, step_index: int) -> int:
        """File a step's deltas under their requests now; returns how many requests finished.

        :func:`inproc.run.idle.file_delta`, written out: a call per delta cost about a third of it at C = 128.
        """
        finished, active = 0, self.active
        for d in res.deltas:
            req = active.get(d.request_id)
            if req is None:
                continue  # not this cell's (aborted before it, or another caller's)
            new = d.new_token_ids
            if new:
                if req.initial and not req.token_steps:
                    self.started += 1
                req.token_steps.append(step_index)
                req.token_counts.append(len(new))
                req.token_ids.extend(new)
            if req.num_cached_tokens is None:
                req.num_cached_tokens = d.num_cached_tokens
            if d.finished:
                req.finished_step, req.finish_reason = step_index, d.finish_reason
                self.done.append(active.pop(d.request_id))
                finished += 1
        return finished

    def hold(self, res: StepResult, step_index: int) -> int:
        """A step's deltas held for :meth:`file_held`; only its finished requests are taken now. Returns how
        many finished."""
        self.held.append((step_index, res))
        deltas, finished, active = res.deltas, 0, self.active
        for d in deltas:
            if d.finished and d.request_id in active:
                self.done.append(active.pop(d.request_id))
                finished += 1
        self.held_deltas += len(deltas)
        if self.held_deltas >= HELD_DELTAS:
            self.file_held()
        return finished

    def file_held(self) -> None:
        """File the held steps' deltas under their requests, as :meth:`file` would have one step at a time."""
        held, self.held, self.held_deltas = self.held, [], 0
        by_id = self.by_id
        for step_index, res in held:
            for d in res.deltas:
                req = by_id.get(d.request_id)
                if req is None or req.finished_step is not None:
                    continue  # not this cell's, or no longer in flight at this step
                new = d.new_token_ids
                if new:
                    req.token_steps.append(step_index)
                    req.token_counts.append(len(new))
                    req.token_ids.extend(new)
                if req.num_cached_tokens is None:
                    req.num_cached_tokens = d.num_cached_tokens
                if d.finished:
                    req.finished_step, req.finish_reason = step_index, d.finish_reason
