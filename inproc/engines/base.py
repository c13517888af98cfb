"""The engine interface the driver talks to.

Everything engine-specific lives in an adapter (``vllm_engine.py``, ``sglang_engine.py``)
that implements :class:`Engine`. The driver never imports an engine: it submits
token-id requests, calls :meth:`Engine.step` once per engine iteration, and reads
capacity and queue counts through this interface. Plain Python only (no torch here).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence


@dataclass(frozen=True)
class KVCacheGroup:
    """One KV-cache group as the engine allocates it (full attention, MLA, sliding window...)."""

    kind: str  # e.g. "full_attention", "mla", "sliding_window", "token_pool" (SGLang)
    block_size: int  # tokens per block (SGLang: page size)
    num_layers: int
    sliding_window: int | None = None  # tokens; None when the group keeps every token


@dataclass(frozen=True)
class Capacity:
    """KV-cache capacity and batch limits, read from the built engine."""

    num_blocks: int  # blocks in the shared pool, as the engine reports it (SGLang: pages)
    block_size: int  # tokens per block (SGLang: page size)
    kv_tokens: int  # tokens the pool holds for one full-attention sequence set
    groups: tuple[KVCacheGroup, ...]
    max_num_seqs: int  # vLLM max_num_seqs / SGLang max_running_requests
    max_num_batched_tokens: int | None  # per-step token budget (SGLang: chunked prefill size)
    max_model_len: int
    # The engine's own answer to "how many requests of max_model_len fit?",
    # computed by the engine's code (vLLM get_max_concurrency_for_kv_cache_config).
    engine_max_concurrency: float | None = None
    extra: dict[str, float | int | str | None] = field(default_factory=dict)
    # Blocks requests can actually hold (vLLM keeps one as its null block); None: all of them.
    usable_blocks: int | None = None

    @property
    def allocatable_blocks(self) -> int:
        return self.num_blocks if self.usable_blocks is None else self.usable_blocks


@dataclass(frozen=True)
class EngineInfo:
    """Identity of the built engine, recorded in every results file."""

    name: str  # "vllm" | "sglang"
    version: str
    model: str
    dummy_weights: bool
    capacity: Capacity
    vocab_size: int
    special_token_ids: tuple[int, ...]
    settings: dict[str, object] = field(default_factory=dict)  # resolved engine args worth showing


@dataclass(frozen=True)
class RequestSpec:
    """One request as the driver submits it: token ids in, a fixed output length out."""

    request_id: str
    prompt_token_ids: Sequence[int]
    max_tokens: int
    temperature: float = 1.0
    seed: int | None = None
    ignore_eos: bool = True


@dataclass(frozen=True)
class RequestDelta:
    """What one engine step produced for one request."""

    request_id: str
    new_token_ids: tuple[int, ...]
    finished: bool
    finish_reason: str | None = None
    num_cached_tokens: int | None = None  # prompt tokens served from the prefix cache


@dataclass(frozen=True)
class StepResult:
    """One engine iteration, as seen from inside the engine.

    ``num_running`` / ``num_waiting`` are the scheduler's own queue lengths read at the
    moment it formed this step's batch (after admission), so ``num_running`` is the
    batch the step ran. ``num_scheduled_tokens`` is the step's token budget used
    (prefill chunks + decode tokens); -1 where the engine does not expose it.
    """

    deltas: tuple[RequestDelta, ...]
    num_running: int
    num_waiting: int
    num_scheduled_tokens: int = -1
    num_preempted: int = 0


class Engine(Protocol):
    """An engine built in the calling process and stepped by the tool."""

    info: EngineInfo

    def add_request(self, spec: RequestSpec) -> None:
        """Queue a request; it is scheduled by a later :meth:`step`."""

    def step(self) -> StepResult:
        """Run exactly one engine iteration (schedule + forward + outputs)."""

    def abort(self, request_ids: Sequence[str]) -> None:
        """Drop requests wherever they are (waiting or running)."""

    def has_unfinished(self) -> bool:
        """True while any request is waiting or running."""

    def reset_prefix_cache(self) -> bool:
        """Empty the prefix cache; returns False if the engine refused (requests in flight)."""

    def counters(self) -> dict[str, int]:
        """Cumulative engine statistics since build, as the engine counts them.

        Keys (present when the engine reports them): ``prefix_queries`` / ``prefix_hits``
        (prompt tokens looked up in / served from the prefix cache), ``preemptions``,
        ``generation_tokens`` (output tokens the engine core emitted),
        ``spec_drafts`` / ``spec_draft_tokens`` / ``spec_accepted_tokens`` (speculative
        decoding). The driver takes differences over a window.
        """

    def shutdown(self) -> None:
        """Release the engine (worker processes, shared memory, temp files)."""


class EngineBuildError(RuntimeError):
    """The engine could not be built from the profile (bad argument, missing model...)."""
