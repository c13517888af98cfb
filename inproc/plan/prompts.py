"""Synthetic token-id prompts: seeded, inside the model's vocabulary, never a prefix-cache accident.

Every prompt is drawn from a key (what it is for: prefill sample, cell context, request
suffix) mixed with the run's seed, so prompts differ between cells and between runs
(different seeds) yet a recorded seed reproduces them exactly.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

#: Fraction of the vocabulary kept clear at each end. Tokenizers put their special and
#: control ids at the very start (``<s>``, ``</s>``, byte-fallback) or the very end
#: (Llama 3, DeepSeek) of the vocabulary; random ids from the middle are ordinary tokens.
EDGE_MARGIN_FRACTION = 1 / 16
EDGE_MARGIN_MAX = 1024


@dataclass(frozen=True)
class PromptFactory:
    """Draws prompts for one run from ``seed``."""

    vocab_size: int
    seed: int
    special_token_ids: tuple[int, ...] = ()

    @property
    def token_range(self) -> tuple[int, int]:
        """Half-open range ``[lo, hi)`` of ids prompts are drawn from."""
        margin = min(EDGE_MARGIN_MAX, max(1, int(self.vocab_size * EDGE_MARGIN_FRACTION)))
        return margin, self.vocab_size - margin

    def tokens(self, n: int, *key: object) -> list[int]:
        """``n`` ids drawn for ``key``: the same key and seed always give the same ids."""
        words = [self.seed & 0xFFFFFFFF] + [zlib.crc32(repr(k).encode()) for k in key]
        rng = np.random.default_rng(np.random.SeedSequence(words))
        lo, hi = self.token_range
        ids = rng.integers(lo, hi, size=n, dtype=np.int64)
        if self.special_token_ids:
            bad = np.isin(ids, self.special_token_ids)
            ids[bad] = lo + (ids[bad] - lo + 1) % (hi - lo)
        return ids.tolist()


def suffix_length(context: int, suffix_tokens: int) -> int:
    """Unique tail length of a shared-mode prompt (at most half the context)."""
    return max(1, min(suffix_tokens, context // 2))


def row_prefix(factory: PromptFactory, context: int, suffix_tokens: int) -> list[int]:
    """The shared context of row ``context`` (all but its unique suffix), the same for every cell of the row."""
    return factory.tokens(context - suffix_length(context, suffix_tokens), "shared", context)


def prefill_prompt(factory: PromptFactory, context: int, sample: int, mode: str, suffix_tokens: int) -> list[int]:
    """The ``context``-token prompt of a cold-prefill sample.

    In ``shared`` mode it is the row's shared context plus a unique suffix, so the last
    sample leaves that context in the prefix cache: the priming of the row's decode cells.
    """
    if mode != "shared":
        return factory.tokens(context, "prefill", context, sample)
    prefix = row_prefix(factory, context, suffix_tokens)
    return prefix + factory.tokens(context - len(prefix), "prefill", context, sample)


@dataclass(frozen=True)
class CellPrompts:
    """Prompts of one decode cell in ``shared`` or ``distinct`` mode; every prompt is ``context`` long."""

    factory: PromptFactory
    context: int
    concurrency: int
    mode: str
    suffix_tokens: int

    def shared_prefix(self) -> list[int]:
        """The context every request of a shared-mode row starts with: one per context, primed once a row."""
        return row_prefix(self.factory, self.context, self.suffix_tokens)

    def request(self, index: int, _prefix: list[int] | None = None) -> list[int]:
        """Prompt of the ``index``-th request of the cell (0-based, refills continue counting)."""
        if self.mode == "distinct":
            return self.factory.tokens(self.context, "distinct", self.context, self.concurrency, index)
        prefix = _prefix if _prefix is not None else self.shared_prefix()
        n = self.context - len(prefix)
        return prefix + self.factory.tokens(n, "suffix", self.context, self.concurrency, index)
