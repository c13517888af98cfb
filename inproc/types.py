"""The plain data every layer shares: what is launched, what the engine holds, what a step did.

Plain Python only: no engine, no torch, no numpy. Engines fill them (``inproc.engines``), the rest reads them."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Mapping, Sequence

from inproc.drafts import SpecStep  # StepResult.spec

# -- cell statuses -------------------------------------------------------------
VALID = "Valid"
QUEUED = "Requests queued"
OVER_CAPACITY = "Over capacity"
EXCEEDS_MAX_LEN = "Exceeds max model length"
LOOPED = "Looped"
ERROR = "Error"
PENDING = "Pending"  # planned, not measured yet (a run in progress or interrupted)

STATUSES = (VALID, QUEUED, OVER_CAPACITY, EXCEEDS_MAX_LEN, LOOPED, ERROR, PENDING)

#: Statuses whose figures are shown as headline numbers in the matrix.
HEADLINE = (VALID, QUEUED)


# -- what is launched ------------------------------------------------------------
@dataclass(frozen=True)
class LaunchSpec:
    """What an engine adapter builds: engine name, model, its CLI arguments, its environment."""

    engine: str
    model: str
    engine_args: Mapping[str, object] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    anatomy: bool = True  # the step anatomy's engine accounting (MatrixSettings.anatomy): on, the adapter turns it on
    temperature: float | None = None  # the plan's, for an engine whose sampler is fixed at build (transformers)


# -- what the built engine holds ---------------------------------------------------
@dataclass(frozen=True)
class KVCacheGroup:
    """One KV-cache group as the engine allocates it (full attention, MLA, sliding window...)."""

    kind: str  # e.g. "full_attention", "mla", "sliding_window", "chunked_local_attention", "mamba", "token_pool"
    block_size: int  # tokens per block (SGLang: page size)
    num_layers: int
    sliding_window: int | None = None  # tokens (or the attention chunk); None when the group keeps every token
    # The engine's per-request cap in blocks (a window or chunk + tokens in flight; a Mamba state's pages).
    max_blocks: int | None = None
    pool_blocks: int | None = None  # a pool of its own (SGLang's hybrid SWA pool); None: the shared pool


@dataclass(frozen=True)
class Capacity:
    """KV-cache capacity and batch limits, read from the built engine."""

    num_blocks: int  # blocks in the shared pool, as the engine reports it (SGLang: pages)
    block_size: int  # tokens per block (SGLang: page size)
    kv_tokens: int  # tokens the pool holds for one full-attention sequence set
    groups: tuple[KVCacheGroup, ...]
    max_num_seqs: int  # the engine's limit on requests running at once
    max_num_batched_tokens: int | None  # per-step token budget (SGLang: chunked prefill size)
    max_model_len: int
    engine_max_concurrency: float | None = None  # requests of max_model_len that fit, by the engine's own code
    extra: Mapping[str, float | int | str | None] = field(default_factory=dict)
    # Blocks requests can actually hold (an engine may keep some for itself); None: all of them.
    usable_blocks: int | None = None

    @property
    def allocatable_blocks(self) -> int:
        return self.num_blocks if self.usable_blocks is None else self.usable_blocks

    @property
    def prefix_caching(self) -> bool:
        return bool(self.extra.get("prefix_caching", True))


@dataclass(frozen=True)
class Placement:
    """Where the engine's ranks run: nodes, the global ranks on each, the devices they use.

    Every engine here places its ranks contiguously: node ``n`` of ``nodes`` holds ranks
    ``n × per_node … (n + 1) × per_node - 1``. ``gpus_per_node`` is 0 on a CPU (the ranks
    are worker processes). ``nodes`` is None where a cluster manager places the ranks at
    build (Ray), and ``ranks`` is then empty.
    """

    nodes: int | None
    world_size: int  # ranks of the engine, over every node
    ranks: tuple[tuple[int, ...], ...]  # global ranks on each node, node 0 (the head) first
    gpus_per_node: int | None
    backend: str  # who starts the ranks: the engine's own multiprocessing ("mp"), "ray", one process ("uni")
    rendezvous: str = ""  # host:port every node joins (torch's TCPStore on global rank 0); "" on one node

    def node_ranks(self, node_rank: int) -> tuple[int, ...]:
        """The global ranks node ``node_rank`` runs."""
        return self.ranks[node_rank] if 0 <= node_rank < len(self.ranks) else ()

    def describe(self) -> str:
        """One line: ``2 nodes × 1 rank (ranks 0 | 1), 0 GPUs per node, mp, rendezvous 127.0.0.1:29501``."""
        if self.nodes is None:
            return f"{self.world_size} ranks placed by {self.backend} at build"
        per_node = len(self.ranks[0]) if self.ranks else 0
        ranks = " | ".join(_span(r) for r in self.ranks)
        devices = f"{self.gpus_per_node} GPUs per node" if self.gpus_per_node else "CPU worker processes"
        where = f", rendezvous {self.rendezvous}" if self.rendezvous and self.nodes > 1 else ""
        return (f"{self.nodes} node{'s' if self.nodes != 1 else ''} × {per_node} rank{'s' if per_node != 1 else ''} "
                f"(ranks {ranks}), {devices}, {self.backend}{where}")


def _span(ranks: tuple[int, ...]) -> str:
    """``0`` / ``0,1`` / ``0–7``: a node's ranks, short."""
    if len(ranks) > 2 and ranks == tuple(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}–{ranks[-1]}"
    return ",".join(map(str, ranks))


def contiguous_placement(world_size: int, nodes: int, on_gpu: bool, backend: str, rendezvous: str = "") -> Placement:
    """Ranks split evenly over ``nodes``, in order (the engines check the division themselves)."""
    per_node = max(world_size // max(nodes, 1), 1)
    ranks = tuple(tuple(range(n * per_node, (n + 1) * per_node)) for n in range(nodes))
    return Placement(nodes, world_size, ranks, per_node if on_gpu else 0, backend, rendezvous)


@dataclass(frozen=True)
class EngineSettings:
    """The engine's resolved settings inproc reads, named alike for every engine; ``shown``: the rest, for reports."""

    dtype: str | None = None  # the model's dtype ("bfloat16")
    quantization: str | None = None  # "fp8", ...; None: unquantized
    kv_cache_dtype: str | None = None  # "auto", "fp8", ...
    tensor_parallel_size: int | None = None  # vLLM tensor_parallel_size, SGLang tp_size
    speculative_method: str | None = None  # vLLM speculative_config.method, SGLang speculative_algorithm; None: off
    num_speculative_tokens: int | None = None  # drafts per verify: vLLM num_speculative_tokens, SGLang speculative_num_draft_tokens
    async_scheduling: bool | None = None  # vLLM: steps return the previous batch's outputs (None: not vLLM)
    event_loop: str | None = None  # SGLang: "overlap" or "normal" (None: not SGLang)
    graph_capture_memory_bytes: int | None = None  # what CUDA-graph capture took (bytes, seconds); None: nothing captured
    graph_capture_s: float | None = None
    graph_capture_sizes: tuple[int, ...] | None = None  # token counts captured as resolved; (): none; None: not recorded
    compute_dtype: str | None = None  # the matmuls' dtype, from the engine's kernels (engines/kernels.py)
    compute_dtype_source: str | None = None  # where it was read from, or why unknown; both None: not recorded
    shown: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def from_flat(cls, d: Mapping[str, object]) -> "EngineSettings":
        """The settings of a flat dict, as results files up to schema 6 held them (both engines' names)."""
        typed = {f.name for f in fields(cls)} - {"shown"}
        aliases = {"tp_size": "tensor_parallel_size", "speculative_algorithm": "speculative_method",
                   "speculative_num_draft_tokens": "num_speculative_tokens"}
        out = {aliases.get(k, k): v for k, v in d.items() if k in typed or k in aliases}
        return cls(**out, shown={k: v for k, v in d.items() if k not in typed and k not in aliases})


@dataclass(frozen=True)
class EngineInfo:
    """Identity of the built engine, recorded in every results file."""

    name: str
    version: str
    model: str
    dummy_weights: bool
    capacity: Capacity
    vocab_size: int
    special_token_ids: tuple[int, ...]
    settings: EngineSettings = EngineSettings()  # resolved engine settings
    forward_source: str = ""  # where per-step bytes and FLOPs come from ("" when the engine reports none)
    placement: Placement | None = None  # nodes and ranks (None: the adapter did not say)


def special_token_ids(hf_config) -> tuple[int, ...]:
    """BOS / EOS / PAD ids of a Hugging Face config (each may be one id or a list)."""
    found = set()
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        value = getattr(hf_config, key, None)
        for v in value if isinstance(value, (list, tuple, set)) else [value]:
            if v is not None:
                found.add(int(v))
    return tuple(sorted(found))


# -- requests and steps ---------------------------------------------------------------
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


#: CUDA-graph runtime modes as engines report them (vLLM's CUDAGraphStat.runtime_mode).
GRAPH_MODES = ("NONE", "PIECEWISE", "FULL")


@dataclass(frozen=True)
class BatchShape:
    """The batch a step formed, read from the scheduler right after it formed it.

    A request is in prefill while the tokens it has computed before this step are short of
    its prompt (a resumed, preempted request recomputes its prompt and output so far).
    """

    num_prefill_reqs: int
    num_prefill_tokens: int
    num_decode_reqs: int
    num_decode_tokens: int  # with speculative decoding: 1 + drafts per request

    @property
    def num_reqs(self) -> int:
        return self.num_prefill_reqs + self.num_decode_reqs


@dataclass(frozen=True)
class ForwardStats:
    """What the engine reported of one batch's forward pass; None where it reports nothing.

    ``estimated``: the bytes and FLOPs are inproc's estimate from the model (SGLang),
    not the engine's own accounting (vLLM's PerfStats).
    """

    graph_mode: str | None = None  # one of GRAPH_MODES
    num_unpadded_tokens: int | None = None
    num_padded_tokens: int | None = None
    flops: float | None = None  # per GPU
    read_bytes: float | None = None  # per GPU
    write_bytes: float | None = None  # per GPU
    estimated: bool = False


@dataclass(frozen=True)
class StepResult:
    """One engine iteration, as seen from inside the engine.

    ``num_running`` / ``num_waiting`` are the scheduler's own queue lengths read at the moment it formed this
    step's batch (after admission), so ``num_running`` is the batch the step ran. ``num_scheduled_tokens`` is the
    step's token budget used (prefill chunks + decode tokens); -1 where the engine does not expose it.

    ``deltas``, ``forward`` and ``spec`` belong to the batch whose outputs this step returned: the batch it formed
    itself (``returned_lag`` 0), or under async scheduling / SGLang's overlap loop the one formed ``returned_lag``
    steps earlier; -1 when it returned none. ``schedule_s`` / ``update_s``: host seconds inside the scheduler's
    batch forming and output processing; ``probe_s`` / ``convert_s``: seconds the adapter's own instrumentation
    / its turning the engine's outputs into ``deltas`` took (inside the step, unlike the harness).
    """

    deltas: tuple[RequestDelta, ...]
    num_running: int
    num_waiting: int
    num_scheduled_tokens: int = -1
    num_preempted: int = 0
    batch: BatchShape | None = None
    returned_lag: int = 0
    forward: ForwardStats | None = None
    schedule_s: float = 0.0
    update_s: float = 0.0
    probe_s: float = 0.0
    convert_s: float = 0.0
    kv_used_blocks: int | None = None  # KV blocks requests held once the step formed its batch (docs/capacity.md)
    kv_used_window_blocks: int | None = None  # the same of SGLang's hybrid sliding-window pool
    spec: SpecStep | None = None  # drafts verified in the returned batch; None: not speculating or not counted


@dataclass(frozen=True)
class EngineCounters:
    """Cumulative engine statistics since build, as the engine counts them; None where it counts none.

    ``prefix_queries`` / ``hits``: prompt tokens looked up in / served from the prefix cache.
    ``generation_tokens``: output tokens the engine core emitted; ``dropped_tokens``: of those, emitted for
    requests already aborted. ``spec_*``: drafts, draft tokens, accepted draft tokens. Differences over a window."""

    generation_tokens: int = 0
    prefix_queries: int | None = None
    prefix_hits: int | None = None
    preemptions: int | None = None
    dropped_tokens: int | None = None
    spec_drafts: int | None = None
    spec_draft_tokens: int | None = None
    spec_accepted_tokens: int | None = None

    def to_dict(self) -> dict[str, int]:
        """The counters the engine reports, by name (the results file's form)."""
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_dict(cls, d: Mapping[str, int]) -> "EngineCounters":
        return cls(**{k: int(v) for k, v in d.items() if k in cls.__dataclass_fields__})
