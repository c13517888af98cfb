"""Name rules for CUDA device kernels, as the engines and their kernel libraries name them.

Each rule cites the source its name comes from: the repository and file that define or
launch the kernel, or, for the closed libraries (cuBLAS, cuDNN) and the profiler's own
activity names, where the name shows in a published trace. Order matters: the first match
wins, so the specific rules (a MoE GEMM, an attention kernel built on CUTLASS, a copy that
runs as a PyTorch elementwise kernel) come before the generic ones (CUTLASS, cuBLAS, PyTorch's
elementwise and reduce kernels). Names are matched as the torch profiler and nsys print them:
demangled, with template arguments (``void vllm::rms_norm_kernel<c10::BFloat16>(...)``).
"""
from __future__ import annotations

from inproc.kernels.rule import ATTENTION, COMMUNICATION, ELEMENTWISE, GEMM, MEMORY, MOE, SAMPLING, Rule

# torch.compile (Inductor) names its generated Triton kernels by kind and by the fused ops'
# names; the kind decides, so words such as "attention" inside a fused name never mislead.
_INDUCTOR = (
    Rule(r"^triton_tem_fused_\w*?(addmm|bmm|mm)", GEMM,
         "pytorch torch/_inductor/kernel/mm.py (Triton template GEMMs, named triton_tem_fused_*)"),
    Rule(r"^triton_(poi|per|red)_fused", ELEMENTWISE,
         "pytorch torch/_inductor/codegen/triton.py (pointwise / persistent / reduction kernels)"),
)

_ATTENTION = (
    # FlashAttention 3: cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>.
    Rule(r"flash::FlashAttn(Fwd|Bwd)", ATTENTION,
         "flash-attention hopper/flash_fwd_launch_template.h, hopper/flash_fwd_combine_launch_template.h"),
    # FlashAttention 4 (CuTe DSL): the kernel carries its class name.
    Rule(r"FlashAttention(Forward|Backward|MLAForward|SparseMLABackward)\w*", ATTENTION,
         "flash-attention flash_attn/cute/flash_fwd.py, flash_attn/cute/flash_fwd_sm100.py"),
    # FlashMLA (DeepSeek-V3 MLA decode, V3.2/V4 sparse attention).
    Rule(r"flash_fwd_splitkv_mla|flash_fwd_mla_combine|get_mla_metadata_kernel|sparse_attn_fwd", ATTENTION,
         "FlashMLA csrc/sm90/decode/dense/splitkv_mla.cuh, csrc/smxx/decode/combine/combine.cu, "
         "csrc/sm100/decode/head64/kernel.cuh, csrc/sm100/prefill/sparse/fwd/head128/phase1.cuh"),
    # FlashAttention 2, vLLM's vllm_flash_attn fork, and torch SDPA's copy (pytorch_flash::).
    Rule(r"flash_fwd_(splitkv_)?(combine_)?kernel|flash_bwd_\w*kernel", ATTENTION,
         "flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h; pytorch "
         "aten/src/ATen/native/transformers/cuda/flash_attn (namespace pytorch_flash)"),
    Rule(r"BatchDecodeWithPagedKVCache|BatchPrefillWith(Paged|Ragged)KVCache|Single(Prefill|Decode)WithKVCache"
         r"|BatchMLAPage(d)?Attention", ATTENTION,
         "flashinfer include/flashinfer/attention/decode.cuh, prefill.cuh, mla.cuh, hopper/prefill_sm90.cuh"),
    Rule(r"MergeStates?(InPlace|LargeNumIndexSets)?Kernel|VariableLength(MergeStates|AttentionSum)|AttentionSumKernel",
         ATTENTION, "flashinfer include/flashinfer/attention/cascade.cuh"),
    Rule(r"merge_attn_states", ATTENTION, "vllm csrc/attention/merge_attn_states.cu"),
    # trtllm-gen FMHA cubins (FlashInfer's trtllm backend on Blackwell): fmhaSm100aKernel_QkvE4m3...
    Rule(r"fmhaSm\d+[a-z]?Kernel", ATTENTION, "flashinfer include/flashinfer/trtllm/fmha (trtllm-gen cubin names)"),
    # CUTLASS FMHA / MLA on Blackwell (cutlass::fmha::kernel::Sm100FmhaFwdKernel..., Sm100FmhaMlaKernel...).
    Rule(r"cutlass::fmha::|Sm100Fmha", ATTENTION,
         "flashinfer include/flashinfer/attention/blackwell/fmha_cutlass_sm100.cuh; vllm "
         "csrc/attention/mla/sm100_cutlass_mla_kernel.cu; sglang sgl-kernel/csrc/attention/cutlass_mla_kernel.cu"),
    Rule(r"sparse_mla_(decode|prefill)", ATTENTION,
         "flashinfer include/flashinfer/attention/sparse_mla_sm120/decode_dsv4_kernel.cuh, csrc/sparse_mla_sm120_decode_dsv4.cu"),
    # DeepSeek-V3.2 / V4 sparse attention's indexer: DeepGEMM's MQA logits and their clean-up.
    Rule(r"mqa_logits|clean_logits", ATTENTION,
         "DeepGEMM deep_gemm/include/deep_gemm/impls/sm90_fp8_mqa_logits.cuh, sm90_fp8_paged_mqa_logits.cuh, "
         "sm100_mqa_logits.cuh, smxx_clean_logits.cuh"),
    Rule(r"paged_attention_v\d_(reduce_)?kernel", ATTENTION,
         "vllm csrc/attention/attention_kernels.cuh, csrc/attention/paged_attention_v1.cu, paged_attention_v2.cu"),
    Rule(r"kernel_unified_attention|^reduce_segments$", ATTENTION,
         "vllm vllm/v1/attention/ops/triton_unified_attention.py"),
    Rule(r"^_fwd_(grouped_)?kernel_stage[12]$", ATTENTION,
         "vllm vllm/v1/attention/ops/triton_decode_attention.py; sglang "
         "python/sglang/kernels/ops/attention/decode_attention.py"),
    Rule(r"^_fwd_kernel(_alibi)?$", ATTENTION,
         "vllm vllm/v1/attention/ops/prefix_prefill.py, triton_prefill_attention.py; sglang "
         "python/sglang/kernels/ops/attention/extend_attention.py, prefill_attention.py"),
    # torch SDPA's memory-efficient (CUTLASS) and cuDNN backends.
    Rule(r"fmha_cutlass[FB]_|PyTorchMemEffAttention", ATTENTION,
         "pytorch aten/src/ATen/native/transformers/cuda/mem_eff_attention/kernels/cutlassF.h"),
    Rule(r"cudnn_generated_fort_native_sdpa", ATTENTION,
         "cuDNN's SDPA kernels as torch SDPA's cuDNN backend runs them (named in published torch profiler traces)"),
    # KV-cache writes belong to attention (the categorizer's definition).
    Rule(r"reshape_and_cache|concat_and_cache_mla|AppendPagedKV(Mla)?Cache", ATTENTION,
         "vllm csrc/cache_kernels.cu, vllm/v1/attention/ops/triton_reshape_and_cache_flash.py; "
         "flashinfer include/flashinfer/page.cuh"),
)

_COMMUNICATION = (
    Rule(r"ncclDevKernel_|ncclKernel_", COMMUNICATION,
         "nccl src/device/common.h, src/device/generate.py (ncclDevKernel_<Coll>_<Op>_<type>_<ALGO>_<PROTO>; "
         "ncclKernel_ before 2.19)"),
    Rule(r"cross_device_reduce_[12]stage", COMMUNICATION,
         "vllm csrc/custom_all_reduce.cuh; sglang sgl-kernel/csrc/allreduce/custom_all_reduce.cuh"),
    Rule(r"deep_ep::", COMMUNICATION, "DeepEP csrc/kernels/intranode.cu, internode.cu (namespace deep_ep)"),
    Rule(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|moeA2A", COMMUNICATION,
         "flashinfer include/flashinfer/comm/trtllm_allreduce_fusion.cuh, trtllm_moe_allreduce_fusion.cuh, "
         "csrc/nv_internal/tensorrt_llm/kernels/communicationKernels/moeAlltoAllKernels.cu; sglang "
         "sgl-kernel/csrc/allreduce/; pytorch torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu",
         ignore_case=True),
)

_MOE = (
    Rule(r"fused_moe_kernel", MOE,
         "vllm vllm/model_executor/layers/fused_moe/fused_moe.py; sglang "
         "python/sglang/kernels/ops/moe/fused_moe_triton_kernels.py"),
    Rule(r"marlin_moe|MarlinMoE|moe_wna16", MOE,
         "vllm csrc/moe/marlin_moe_wna16/marlin_template.h (marlin_moe_wna16::Marlin<...>); sglang "
         "sgl-kernel/csrc/moe/marlin_moe_wna16/"),
    Rule(r"topkGating(Softmax|Sigmoid)|moeSoftmax|moeTopK|topk_(gating_)?(softmax|sigmoid)", MOE,
         "vllm csrc/moe/topk_softmax_kernels.cu; sglang sgl-kernel/csrc/moe/moe_topk_softmax_kernels.cu, "
         "moe_topk_sigmoid_kernels.cu"),
    Rule(r"moe_align_block_size|count_and_sort_expert_tokens|moe_sum|moe_lora_align", MOE,
         "vllm csrc/moe/moe_align_sum_kernels.cu; sglang sgl-kernel/csrc/moe/moe_align_kernel.cu, moe_sum_reduce.cu"),
    Rule(r"grouped_topk|moe_fused_gate|router_gemm|deepseek_v3_topk|moe_hash_topk", MOE,
         "vllm csrc/moe/grouped_topk_kernels.cu; sglang sgl-kernel/csrc/moe/moe_fused_gate.cu, "
         "sgl-kernel/csrc/gemm/dsv3_router_gemm_entry.cu; flashinfer csrc/fused_moe/noAuxTcKernels.cu"),
    # CUTLASS grouped GEMMs run the experts (vLLM / SGLang cutlass MoE, TRT-LLM's MoeFCGemm in FlashInfer).
    Rule(r"GroupProblemShape|MoeFCGemm|moe_gemm|grouped_g?e?mm|GemmGrouped", MOE,
         "vllm csrc/quantization/w8a8/cutlass/moe/grouped_mm_c3x.cuh; sglang "
         "sgl-kernel/csrc/moe/cutlass_moe/w4a8/w4a8_grouped_mm_c3x.cuh; flashinfer "
         "csrc/nv_internal/tensorrt_llm/cutlass_extensions/include/cutlass_extensions/gemm/kernel/moe_cutlass_kernel.h"),
    # TRT-LLM / FlashInfer fused-MoE routing, permute and finalize; trtllm-gen routing (moe::dev::routing...).
    Rule(r"expandInputRowsKernel|finalizeMoeRouting|moe(Un)?[Pp]ermute|moe::dev::|routing(Main|Indices)\w*Kernel"
         r"|ExpertPrefixSum|BuildExpertMaps|ActiveExpertMaps|moeActivationKernel", MOE,
         "flashinfer csrc/fused_moe/cutlass_backend/cutlass_fused_moe_kernels.cuh; "
         "include/flashinfer/trtllm/fused_moe/RoutingKernel.cuh"),
    # trtllm-gen batched GEMM cubins (bmm_E2m1xFp32_..., bmm_Bfloat16_...), run by FlashInfer's fused MoE.
    Rule(r"^bmm_[A-Z][A-Za-z0-9]*_", MOE,
         "flashinfer csrc/trtllm_batched_gemm_runner.cu, csrc/trtllm_fused_moe_runner.cu"),
    # DeepGEMM's M-grouped GEMMs (GemmType MGroupedContiguous = 1, MGroupedMasked = 2,
    # MGroupedContiguousWithPsumLayout = 5; demangled as (deep_gemm::GemmType)N) and its MoE megakernels.
    Rule(r"deep_gemm::.*\(deep_gemm::GemmType\)[125]\b|GemmType::MGrouped|mega_moe", MOE,
         "DeepGEMM deep_gemm/include/deep_gemm/common/types.cuh, impls/sm100_fp8_fp4_mega_moe.cuh"),
    Rule(r"_fwd_kernel_ep_(scatter|gather)|ep_scatter|ep_gather|_count_expert_num_tokens", MOE,
         "vllm vllm/model_executor/layers/fused_moe/utils.py, deep_gemm_utils.py"),
)

_GEMM = (
    Rule(r"deep_gemm::sm\d+_", GEMM, "DeepGEMM deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh, "
         "sm90_bf16_gemm.cuh, sm100_fp8_fp4_gemm_1d1d.cuh, sm100_bf16_gemm.cuh"),
    Rule(r"\bMarlin<|marlin::|gptq_marlin", GEMM,
         "vllm csrc/quantization/gptq_marlin/marlin_template.h; sglang sgl-kernel/csrc/gemm/marlin/gptq_marlin.cu"),
    # cuBLAS 12.8+ (nvjet_tst_128x16_64x11_2x1_v_bz_TNT, nvjet_tss_..., nvjet_hsh_...).
    Rule(r"^nvjet_", GEMM, "cuBLAS's nvjet kernels (closed source; as published torch profiler / nsys traces "
         "of vLLM and SGLang name them)"),
    Rule(r"sm\d+_xmma_|xmma_gemm|s\d+gemm|h\d+gemm|(ampere|volta|turing|hopper)_\w*gemm|gemmk1_kernel|gemmSN_"
         r"|splitKreduce_kernel|[Gg]emv|cublas", GEMM,
         "cuBLAS / cuBLASLt kernels (closed source; named in the torch profiler table of nm-vllm pull 332, "
         "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize...)"),
    # trtllm-gen dense GEMM cubins (gemm_Bfloat16_E4m3E4m3_Fp32_t128x8x128u2_...).
    Rule(r"^gemm_[A-Z][A-Za-z0-9]*_", GEMM, "flashinfer csrc/trtllm_gemm_runner.cu"),
    # CUTLASS 2.x names (cutlass_80_tensorop_bf16_s16816gemm_...) and 3.x device kernels: what CUTLASS runs that
    # the rules above did not claim (its attention and MoE kernels) is a GEMM.
    Rule(r"cutlass_\d+_(tensorop|wmma|simt)|cutlass::gemm::|cutlass::device_kernel|cutlass::Kernel|cutlass3x"
         r"|cutlass_scaled_mm", GEMM,
         "vllm csrc/quantization/w8a8/cutlass/c3x/scaled_mm.cuh (cutlass::device_kernel<...GemmUniversal...>); "
         "CUTLASS include/cutlass/device_kernel.h; CUTLASS 2.x library kernel names as cuBLAS runs them"),
)

_SAMPLING = (
    Rule(r"SamplingFrom(Prob|Logits)|(TopK|TopP)RenormProb|TopKMaskLogits|RadixTopK|OnlineSoftmax"
         r"|ChainSpeculativeSampling|AirTopP", SAMPLING, "flashinfer include/flashinfer/sampling.cuh, topk.cuh"),
    Rule(r"_topk_topp_kernel|_topp_sb_|_gumbel_sample_kernel|_temperature_kernel|_penalties_kernel|_min_p_kernel"
         r"|_bad_words_kernel|apply_repetition_penalties|_rejection_kernel", SAMPLING,
         "vllm vllm/v1/sample/ops/topk_topp_triton.py, vllm/v1/worker/gpu/sample/ (gumbel.py, penalties.py, "
         "min_p.py, bad_words.py), csrc/sampler.cu"),
    Rule(r"token_bitmask|grammar_bitmask", SAMPLING,
         "sglang sgl-kernel/csrc/grammar/apply_token_bitmask_inplace_cuda.cu; vllm v1 structured output"),
    # PyTorch kernels the samplers call: torch.topk, softmax / log_softmax, argmax, sort + cumsum (top-p),
    # exponential_ / multinomial (random sampling).
    Rule(r"sbtopk|gatherTopK|radixSelect|SoftMax|softmax_warp|ArgMaxOps|ArgMinOps|DeviceRadixSort"
         r"|DeviceSegmentedRadixSort|DeviceScan|segmented_sort|bitonicSort|multinomial|distribution_elementwise"
         r"|exponential_kernel|sampleMultinomial|radixSortKVInPlace", SAMPLING,
         "pytorch aten/src/ATen/native/cuda/TensorTopK.cu, SoftMax.cu, ReduceArgMaxKernel.cu, Sort.cu, SortUtils.cuh, "
         "DistributionTemplates.h (called by vllm vllm/v1/sample/ops/topk_topp_sampler.py)"),
)

_ELEMENTWISE = (
    Rule(r"rms_?norm|RMSNorm|layer_?norm|LayerNorm", ELEMENTWISE,
         "vllm csrc/layernorm_kernels.cu (rms_norm_kernel, fused_add_rms_norm_kernel); flashinfer "
         "include/flashinfer/norm.cuh (RMSNormKernel, FusedAddRMSNormKernel); pytorch layer_norm_kernel.cu",
         ignore_case=True),
    Rule(r"[Rr]otary|(^|[_:])rope|Rope|RoPE", ELEMENTWISE,
         "vllm csrc/pos_encoding_kernels.cu (rotary_embedding_kernel); flashinfer include/flashinfer/pos_enc.cuh; "
         "sglang sgl-kernel/csrc/elementwise/rope.cu"),
    Rule(r"act_and_mul|activation_kernel|silu|gelu|swiglu|relu", ELEMENTWISE,
         "vllm csrc/activation_kernels.cu (act_and_mul_kernel, activation_kernel); sglang "
         "sgl-kernel/csrc/elementwise/activation.cu", ignore_case=True),
)

_QUANT = (
    Rule(r"quant|fp4|fp8|mxfp|cvt_fp16_to|e4m3|ue8m0", ELEMENTWISE,
         "vllm csrc/quantization/w8a8/fp8/common.cu (scaled_fp8_quant_kernel, "
         "dynamic_per_token_scaled_fp8_quant_kernel), vllm/model_executor/layers/quantization/utils/mxfp4_utils.py "
         "(_downcast_to_mxfp), csrc/quantization/fp4/nvfp4_quant_kernels.cu, "
         "vllm/model_executor/layers/quantization/utils/fp8_utils.py (_per_token_group_quant_fp8); sglang "
         "sgl-kernel/csrc/gemm/per_token_group_quant_8bit.cu", ignore_case=True),
)

_MEMORY = (
    # The torch profiler's names for CUPTI memcpy / memset activities: "Memcpy HtoD (Pageable -> Device)",
    # "Memcpy DtoD (Device -> Device)", "Memset (Device)".
    Rule(r"^Memcpy |^Memset|^memcpy|^memset", MEMORY, "pytorch/kineto libkineto/src/CuptiActivity.cpp "
         "(memcpy / memset activity names)"),
    Rule(r"FillFunctor|fill_kernel|direct_copy_kernel|copy_kernel|CatArrayBatchedCopy|indexSelect(Small|Large)Index"
         r"|index_elementwise_kernel|_memcpy_|vectorized_gather_kernel", MEMORY,
         "pytorch aten/src/ATen/native/cuda/FillKernel.cu, Copy.cu, Shape.cu, Indexing.cu, IndexKernelUtils.cu "
         "(vectorized_gather_kernel: index_select and embedding gathers)"),
)

_GENERIC_GEMM = (
    Rule(r"gemm|matmul|scaled_mm", GEMM, "any other kernel named for a matrix multiply (e.g. vllm "
         "vllm/model_executor/layers/quantization/utils/fp8_utils.py _w8a8_triton_block_scaled_mm)", ignore_case=True),
)

_GENERIC_ELEMENTWISE = (
    Rule(r"elementwise_kernel|reduce_kernel|kernelHistogram1D", ELEMENTWISE,
         "pytorch aten/src/ATen/native/cuda/CUDALoops.cuh (vectorized_elementwise_kernel, elementwise_kernel), "
         "Reduce.cuh (reduce_kernel), SummaryOps.cu (kernelHistogram1D: histc and bincount, a reduction)"),
)

RULES: tuple[Rule, ...] = (*_INDUCTOR, *_ATTENTION, *_COMMUNICATION, *_MOE, *_GEMM, *_SAMPLING, *_MEMORY,
                           *_ELEMENTWISE, *_GENERIC_GEMM, *_QUANT, *_GENERIC_ELEMENTWISE)
