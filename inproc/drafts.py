"""Speculative decoding's drafts as an engine counts them in one step (plain data, shared by every layer)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecStep:
    """The drafts verified in one step's returned batch, as the engine counted them (vLLM's ``SpecDecodingStats``);
    per position i (0-based), drafts whose first i + 1 tokens were all accepted / of at least i + 1 tokens
    (empty: not counted per position). The bonus token is not counted."""

    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    accepted_per_pos: tuple[int, ...] = ()
    drafted_per_pos: tuple[int, ...] = ()
