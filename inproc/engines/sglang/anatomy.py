"""What an SGLang batch was: its shape from the ``ScheduleBatch``, its forward from the batch result.

SGLang reports no per-batch FLOP or byte accounting, so :class:`ForwardCost` estimates
them from the loaded model and its KV pool, and every figure built on them is marked as
inproc's estimate (``ForwardStats.estimated``). CUDA-graph use comes from the batch
result's ``can_run_cuda_graph``.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc.types import BatchShape, ForwardStats

#: How the estimate is made (recorded with every run, shown by the report).
FORWARD_SOURCE = ("inproc's estimate (SGLang reports none): read bytes = weight bytes + Σ over requests of "
                  "context tokens × KV bytes per token; write bytes = new tokens × KV bytes per token; "
                  "FLOPs = 2 × parameters × new tokens + 4 × layers × heads × head dim × Σ new tokens × context "
                  "(parameters and bytes read from the loaded model and KV pool)")


def batch_shape(batch) -> BatchShape:
    """Prefill and decode requests and tokens of a ``ScheduleBatch`` as it is about to run.

    EXTEND: every request prefills ``extend_num_tokens`` in all. DECODE: one token each
    (speculative verify steps are counted as one per request). MIXED: the running requests
    mixed into a prefill batch (``decoding_reqs``) decode one token each, the rest prefill.
    """
    mode, bs = batch.forward_mode, batch.batch_size()
    if mode.is_decode() or mode.is_target_verify():
        return BatchShape(0, 0, bs, bs)
    if mode.is_mixed():
        decoding = len(batch.decoding_reqs or ())
        return BatchShape(bs - decoding, int(batch.extend_num_tokens) - decoding, decoding, decoding)
    if mode.is_extend():
        return BatchShape(bs, int(batch.extend_num_tokens), 0, 0)
    return BatchShape(0, 0, 0, 0)  # IDLE


@dataclass(frozen=True)
class ForwardCost:
    """The model's per-step costs on this rank, read once from the loaded model and KV pool."""

    num_params: int  # parameters on this rank (all experts of an MoE: the estimate is an upper bound)
    weight_bytes: int
    kv_bytes_per_token: float  # K and V (or MLA latent) bytes of one token, all layers, this rank
    attn_flops_per_pair: float  # 4 × layers × attention heads × head dim: one query token × one context token
    graph_mode: str  # the mode a batch that ran under a CUDA graph is counted in

    def forward(self, batch, shape: BatchShape, ran_graph: bool) -> ForwardStats:
        """The estimate for one batch (see :data:`FORWARD_SOURCE`).

        Context: each request's sequence length after this step (``seq_lens_cpu``). New
        tokens: ``extend_lens`` for prefill and mixed batches (stale on decode batches,
        where each request has one). Attention pairs Σ new × context ignore the causal
        triangle inside a prefill chunk: an upper bound there, exact for decode.
        """
        seq = [int(x) for x in batch.seq_lens_cpu.tolist()]
        new = [int(x) for x in batch.extend_lens] if not batch.forward_mode.is_decode() else [1] * len(seq)
        tokens, context = sum(new), sum(seq)
        pairs = sum(n * c for n, c in zip(new, seq))
        return ForwardStats(
            graph_mode=self.graph_mode if ran_graph else "NONE",
            num_unpadded_tokens=tokens,
            num_padded_tokens=tokens,  # SGLang does not report the size a graph padded to
            flops=2.0 * self.num_params * tokens + self.attn_flops_per_pair * pairs,
            read_bytes=self.weight_bytes + context * self.kv_bytes_per_token,
            write_bytes=tokens * self.kv_bytes_per_token,
            estimated=True,
        )


def forward_cost(scheduler, graph_backend: str | None) -> ForwardCost:
    """Read the costs from the scheduler's model runner and KV pool."""
    model = scheduler.tp_worker.model_runner.model
    num_params = weight_bytes = 0
    for p in model.parameters():
        num_params += p.numel()
        weight_bytes += p.numel() * p.element_size()
    pool = scheduler.token_to_kv_pool_allocator.get_kvcache()
    sizes = pool.get_kv_size_bytes()
    total = sum(sizes) if isinstance(sizes, (tuple, list)) else sizes
    rows = getattr(pool, "k_buffer", None)
    rows = int(rows[0].shape[0]) if rows else int(pool.size)
    mc = scheduler.model_config
    heads = int(getattr(mc, "num_attention_heads", 0) or 0)
    layers = int(getattr(mc, "num_attention_layers", None) or mc.num_hidden_layers)
    head_dim = int(getattr(mc, "head_dim", 0) or 0)
    mode = "PIECEWISE" if graph_backend == "breakable" else "FULL"
    return ForwardCost(int(num_params), int(weight_bytes), float(total) / rows, 4.0 * layers * heads * head_dim, mode)
