"""The CUDA name rules on real kernel names, as the torch profiler and nsys print them.

The names are facts: demangled names pasted from published torch-profiler / nsys tables of
vLLM and SGLang runs, or instantiated as the cited source launches them (marked "as launched").
Every rule must be the first match of at least one name here, so a rule no real name
reaches, or one shadowed by an earlier rule, fails.
"""
from __future__ import annotations

import re

import pytest

from inproc.kernels import cuda_rules
from inproc.kernels.categories import CATEGORIES, category

#: (name, expected category). Names quoted from published traces are marked "trace".
NAMES: tuple[tuple[str, str], ...] = (
    # --- attention ------------------------------------------------------------------------------------
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90"
     "<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<112>, cute::C<128> >, 128, "
     "cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, true, false, true, true, false, true, "
     "false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<112> >, "
     "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, true, "
     "false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true, true> > > >"
     "(flash::FlashAttnFwdSm90<...>::Params)", "attention"),  # as launched (FA3)
    ("void cutlass::device_kernel<flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128> >, 7, 256, 1, false, "
     "true, cutlass::bfloat16_t, float, cutlass::arch::Sm90> >(flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, "
     "cute::C<128> >, 7, 256, 1, false, true, cutlass::bfloat16_t, float, cutlass::arch::Sm90>::Params)", "attention"),
    ("kernel_cutlass_kernel_flash_attncuteflash_fwd_sm100FlashAttentionForwardSm100_object_at__tensor0000o11101213_"
     "tensor0000o11101213_tensor0000o10111213_tensor0000o11101213_None_None_None_Non_0", "attention"),  # trace (FA4)
    ("void flash_fwd_splitkv_mla_kernel<Traits<cutlass::bfloat16_t, 64, 64, 576, 512>, true>(DecodingParams)",
     "attention"),  # as launched (FlashMLA)
    ("void flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, 512, 64, 32>(DecodingParams)", "attention"),
    ("void sparse_attn_fwd_kernel<KernelTemplate<576>, TmaParams<...> >(SparseAttnFwdParams, TmaParams<...>)",
     "attention"),
    ("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, "
     "Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, false, true, true, false, false, "
     "false>(Flash_fwd_params)", "attention"),  # as launched (FA2 / vllm_flash_attn)
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, (bool)0, (bool)0, "
     "cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)128, (int)64, (int)4, cutlass::bfloat16_t>>, (bool)0, "
     "(bool)1, (bool)0, (bool)0, (bool)1, (bool)1, (bool)0, (bool)0>(pytorch_flash::Flash_fwd_params)", "attention"),
    ("void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, "
     "(unsigned int)128, (unsigned int)2, (unsigned int)2, (unsigned int)8, (unsigned int)8, (unsigned int)4, "
     "(unsigned int)1, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, "
     "flashinfer::DefaultAttention<false, false, false, false> >, flashinfer::BatchPrefillPagedParams<__nv_bfloat16, "
     "__nv_bfloat16, __nv_bfloat16, int> >(...)", "attention"),  # trace
    ("void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, "
     "flashinfer::DefaultAttention<false, false, false, false>, flashinfer::BatchDecodeParams<__nv_bfloat16, "
     "__nv_bfloat16, __nv_bfloat16, int> >(flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, "
     "int>)", "attention"),
    ("void flashinfer::MergeStatesKernel<8u, 16u, 8u, 4u, __nv_bfloat16, __nv_bfloat16>(__nv_bfloat16*, float*, "
     "__nv_bfloat16*, float*, unsigned int, unsigned int, unsigned int)", "attention"),
    ("void vllm::merge_attn_states_kernel<__nv_bfloat16, 128u>(__nv_bfloat16*, float*, __nv_bfloat16 const*, "
     "float const*, __nv_bfloat16 const*, float const*, unsigned int, unsigned int, unsigned int)", "attention"),
    ("fmhaSm100aKernel_QE4m3KvE2m1OE4m3H128PagedKvCausalP32VarSeqQ128Kv128PersistentContext", "attention"),
    ("void cutlass::device_kernel<cutlass::fmha::kernel::Sm100FmhaMlaKernelTmaWarpspecialized<cute::tuple<cute::C<128>, "
     "cute::C<128>, cute::tuple<cute::C<512>, cute::C<64> > >, ...> >(...)", "attention"),  # as launched (CUTLASS MLA)
    ("void flashinfer::sparse_mla_decode_dsv4_kernel<64, 512>(...)", "attention"),
    ("void deep_gemm::sm90_fp8_paged_mqa_logits<64u, 1u, 64u, 4u, 128u, 128u>(unsigned int, unsigned long, ...)",
     "attention"),  # DeepSeek V3.2 indexer
    ("void deep_gemm::smxx_clean_logits<4u, 8u>(unsigned int, unsigned int, unsigned int, float*, ...)", "attention"),
    ("void vllm::paged_attention_v2_kernel<unsigned short, unsigned short, 128, 16, 128, "
     "(vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, unsigned short*, ...)", "attention"),
    ("kernel_unified_attention_2d", "attention"),
    ("kernel_unified_attention_3d", "attention"),
    ("reduce_segments", "attention"),
    ("_fwd_grouped_kernel_stage1", "attention"),
    ("_fwd_kernel_stage2", "attention"),
    ("_fwd_kernel", "attention"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
     "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", "attention"),  # trace
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0", "attention"),
    ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>("
     "__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, "
     "int, int, int, float const*, float const*)", "attention"),
    # --- communication --------------------------------------------------------------------------------
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)", "communication"),
    ("ncclKernel_AllReduce_RING_LL_Sum_half(ncclDevComm*, unsigned long, ncclWork*)", "communication"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, "
     "__nv_bfloat16*, int, int)", "communication"),  # trace
    ("void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, "
     "__nv_bfloat16*, int, int)", "communication"),
    ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, ...)",
     "communication"),
    ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, "
     "unsigned int**, unsigned long, unsigned long)", "communication"),  # trace
    ("void flashinfer::trtllm_moe_allreduce_fusion::moefinalize_allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, "
     "8, 8, true>(...)", "communication"),
    # --- moe ------------------------------------------------------------------------------------------
    ("fused_moe_kernel", "moe"),
    ("void marlin_moe_wna16::Marlin<1125899906909960l, 562949953487106l, 1125899906909960l, 2814749767106568l, 128, 4, "
     "8, 4, false, 4, 2, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, float const*)", "moe"),  # trace
    ("void vllm::moe::topkGatingSoftmax<4, 64, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, "
     "int, int)", "moe"),
    ("topk_gating_softmax_kernel", "moe"),  # trace
    ("void vllm::moe::count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, unsigned long)", "moe"),
    ("void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, "
     "int*, int)", "moe"),
    ("void vllm::moe::grouped_topk_fused_kernel<__nv_bfloat16, float, 8>(...)", "moe"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, "
     "int, int> >, cutlass::gemm::collective::CollectiveMma<...>, cutlass::epilogue::collective::CollectiveEpilogue<...>, "
     "void, void> >(...)", "moe"),  # as launched (CUTLASS grouped MoE GEMM)
    ("void tensorrt_llm::kernels::cutlass_kernels::expandInputRowsKernel<__nv_bfloat16, __nv_bfloat16>(...)", "moe"),
    ("void moe::dev::routing::routingDeepSeek::routingMainKernel<moe::dev::routing::KernelParams<...> >(...)", "moe"),
    ("bmm_E2m1xFp32_E2m1E2m1_Fp32_t128x8x512u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_TN_transOut_schedS_sm100f", "moe"),
    ("void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, 4096u, 7168u, 256u, 128u, 128u, 128u, 1u, 5u, "
     "128u, 128u, 1u, false, (deep_gemm::GemmType)1, cutlass::bfloat16_t>(float*, int*, unsigned int, unsigned int, "
     "unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)", "moe"),  # M-grouped contiguous
    ("void deep_gemm::sm100_fp8_fp4_mega_moe_impl<...>(void*, ...)", "moe"),
    ("_fwd_kernel_ep_scatter_1", "moe"),
    # --- gemm -----------------------------------------------------------------------------------------
    ("void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, 2112u, 7168u, 1u, 32u, 16u, 128u, 128u, 128u, "
     "1u, 8u, 128u, 128u, 1u, false, (deep_gemm::GemmType)0, cutlass::bfloat16_t>(float*, int*, unsigned int, "
     "unsigned int, unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)", "gemm"),  # trace prefix
    ("void marlin::Marlin<(long)1125899906909960, (long)562949953487106, 256, 1, 8, 8, false, 4, 8, true>(int4 const*, "
     "int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int, int, int, int, int*, bool, bool, int)", "gemm"),
    ("void marlin::gptq_marlin_repack_kernel<(int)256, (int)4, (bool)0>(unsigned int const*, unsigned int const*, "
     "unsigned int*, int, int, int)", "gemm"),  # trace
    ("nvjet_tst_128x16_64x11_2x1_v_bz_TNT", "gemm"),  # trace
    ("nvjet_tss_64x8_64x16_2x1_v_bz_splitK_TNT", "gemm"),  # trace
    ("sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize64x64x128_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
     "cublas", "gemm"),  # trace prefix
    ("sm100_xmma_gemm_bf16f16_bf16f16_bf16f32_tn_n_tilesize256x128x64_stage4_warpsize2x2x1", "gemm"),
    ("void cutlass::device_kernel<cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x128x64_2x1x1_0_"
     "ntn_align8_warpspecialized_pingpong_epi_tma>(cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_"
     "128x128x64_2x1x1_0_ntn_align8_warpspecialized_pingpong_epi_tma::Params)", "gemm"),  # CUTLASS library naming
    ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn", "gemm"),  # trace prefix
    ("ampere_sgemm_32x32_sliced1x4_tn", "gemm"),  # trace
    ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, __nv_bfloat16, __nv_bfloat16, "
     "__nv_bfloat16, float, false, true, true, false, 7, false, cublasGemvParamsEx<int, "
     "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
     "cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >(...)", "gemm"),  # trace prefix
    ("void reduce_1Block_kernel<float, 128, 7, cublasGemvTensorStridedBatched<float>, "
     "cublasGemvTensorStridedBatched<float>, cublasGemvTensorStridedBatched<float> >(float const*, float, "
     "cublasGemvTensorStridedBatched<float>, int, float const*, float, cublasGemvTensorStridedBatched<float>, "
     "cublasGemvTensorStridedBatched<float>, cublasPointerMode_t, cublasLtEpilogue_t, "
     "cublasGemvTensorStridedBatched<biasType<cublasGemvTensorStridedBatched<float>::value_type, float>::type const>)",
     "gemm"),  # trace prefix
    ("gemm_Bfloat16_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_c1x1x1_rM_TN_transOut_schedS_sm100a", "gemm"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_64x64_64x6_tn_align8>"
     "(cutlass_80_tensorop_s16816gemm_bf16_64x64_64x6_tn_align8::Params)", "gemm"),  # trace
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>"
     "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)", "gemm"),  # trace
    ("void cutlass::device_kernel<vllm::enable_sm90_or_later<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
     "int, int>, cutlass::gemm::collective::CollectiveMma<...>, cutlass::epilogue::collective::CollectiveEpilogue<...>, "
     "void, void> > >(...)", "gemm"),  # as launched (vLLM cutlass_scaled_mm)
    ("triton_tem_fused_mm_0", "gemm"),
    ("_w8a8_triton_block_scaled_mm", "gemm"),  # trace
    # --- sampling -------------------------------------------------------------------------------------
    ("void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::BlockScanAlgorithm)2, "
     "(cub::BlockReduceAlgorithm)2, 4u, false, float, int>(float*, int*, int*, int*, float*, unsigned int, ...)",
     "sampling"),
    ("void flashinfer::sampling::TopPRenormProbKernel<1024u, (cub::BlockReduceAlgorithm)2, 4u, float>(...)", "sampling"),
    ("_topk_topp_kernel", "sampling"),
    ("_gumbel_sample_kernel", "sampling"),
    ("apply_token_bitmask_inplace_kernel", "sampling"),
    ("void at::native::radixSortKVInPlace<2, -1, 32, 32, float, long, unsigned int>(at::cuda::detail::TensorInfo<float, "
     "unsigned int>, unsigned int, unsigned int, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, "
     "unsigned int, bool)", "sampling"),  # trace (H200, a transformers MoE's routing: torch.sort)
    ("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)",
     "memory"),  # trace (H200, tests/fixtures/h200/eager_sync.json.gz: the embedding's gather)
    ("void at::cuda::kernelHistogram1D<long, long, int, 1, 2, -1, (at::cuda::CUDAHistogramMemoryType)0, "
     "at::native::(anonymous namespace)::_bincount_cuda_template<long, long>(at::Tensor const&, at::Tensor const&, "
     "long)::{lambda(long)#1}>(at::cuda::detail::TensorInfo<long, int>, at::cuda::detail::TensorInfo<long, int>, "
     "at::cuda::detail::TensorInfo<long, int>, int, long, long, int, ...)", "elementwise"),  # as launched (bincount)
    ("void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float const, "
     "unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, ...)", "sampling"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", "sampling"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, "
     "long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)", "sampling"),
    # --- memory ---------------------------------------------------------------------------------------
    ("Memcpy HtoD (Pinned -> Device)", "memory"),
    ("Memcpy DtoH (Device -> Pinned)", "memory"),  # trace
    ("Memcpy DtoD (Device -> Device)", "memory"),  # trace
    ("Memset (Device)", "memory"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, "
     "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<c10::BFloat16>, at::detail::Array<char*, 1>)",
     "memory"),  # trace prefix
    ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
     "{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}, "
     "at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
     "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(...)", "memory"),  # trace prefix
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_contig<at::native::(anonymous namespace)::"
     "OpaqueType<2u>, unsigned int, 2, 128, 1>(...)", "memory"),  # trace prefix
    ("void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2>(...)",
     "memory"),  # trace prefix
    # --- elementwise ----------------------------------------------------------------------------------
    ("void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, "
     "int, int)", "elementwise"),  # trace prefix
    ("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, "
     "float, int, int)", "elementwise"),
    ("void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, "
     "unsigned int, unsigned int, unsigned int, float, float)", "elementwise"),
    ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, "
     "c10::BFloat16 const*, int, long, long, int, int, int)", "elementwise"),  # trace prefix
    ("void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, __nv_bfloat16, long>(...)",
     "elementwise"),
    ("void vllm::act_and_mul_kernel<c10::BFloat16, __nv_bfloat162, &vllm::silu_kernel<c10::BFloat16>, "
     "&vllm::packed_silu_kernel<__nv_bfloat162>, (bool)1, (bool)1, (bool)0, (bool)1>(T1 *, const T1 *, int)",
     "elementwise"),  # trace prefix
    ("_silu_mul_fp8_quant_deep_gemm", "elementwise"),
    ("void vllm::scaled_fp8_quant_kernel<c10::BFloat16>(c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, long)",
     "elementwise"),  # trace prefix
    ("void per_token_group_quant_8bit_kernel<c10::BFloat16, __nv_fp8_e4m3, false, false, float>(c10::BFloat16 const*, "
     "__nv_fp8_e4m3*, float*, int, int, int, int)", "elementwise"),  # trace prefix
    ("_per_token_group_quant_fp8", "elementwise"),
    ("_downcast_to_mxfp", "elementwise"),  # MXFP4 quantize (vLLM's Triton)
    ("triton_poi_fused__scaled_dot_product_flash_attention_add_mul_permute_stack_sub_unbind_view_0", "elementwise"),
    ("triton_red_fused__to_copy_add_copy__fused_add_rms_norm_moe_forward_shared_3", "elementwise"),  # trace
    ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, "
     "float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
     "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::"
     "{lambda(int)#1}>(int, ...)", "elementwise"),  # trace prefix
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
     "unsigned int, float, 4> >(...)", "elementwise"),
    # --- other: real names no rule claims (yet) --------------------------------------------------------
    ("_compute_slot_mappings_kernel", "other"),
    ("void vllm::sampled_topk::sampled_topk_kernel<512>(float const*, int const*, int*, long, int)", "other"),  # trace
)

#: Pairs where the order of the rules decides: (name, its category, the category a later, generic rule would give).
ORDER_CASES = (
    (NAMES[1][0], "attention", "gemm"),  # FA3's combine runs as cutlass::device_kernel
    ("void cutlass::device_kernel<cutlass::fmha::kernel::Sm100FmhaFwdKernelTmaWarpspecialized<...> >(...)",
     "attention", "gemm"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<...> > >(...)",
     "moe", "gemm"),
    ("void marlin_moe_wna16::Marlin<1125899906909960l, 562949953487106l>(int4 const*)", "moe", "gemm"),
    ("void deep_gemm::sm90_fp8_gemm_1d2d_impl<128u, (deep_gemm::GemmType)2, cutlass::bfloat16_t>(float*)", "moe", "gemm"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >"
     "(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", "memory", "elementwise"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, "
     "long, 4> >(...)", "sampling", "elementwise"),
    ("_silu_mul_fp8_quant_deep_gemm", "elementwise", "gemm"),
    ("void flashinfer::RopeQuantizeAppendPagedKVCacheKernel<...>(...)", "attention", "elementwise"),
    ("triton_poi_fused__scaled_mm_abs_max_0", "elementwise", "gemm"),  # Inductor's kind decides, not the fused ops
)


def first_rule(name: str) -> int | None:
    """Index of the first CUDA rule that matches ``name``."""
    for i, rule in enumerate(cuda_rules.RULES):
        if re.search(rule.pattern, name, re.IGNORECASE if rule.ignore_case else 0):
            return i
    return None


@pytest.mark.parametrize("name,expected", NAMES, ids=[f"{e}:{n[:48]}" for n, e in NAMES])
def test_real_name_gets_its_category(name, expected):
    assert category(name) == expected


def test_every_rule_is_the_first_match_of_a_real_name():
    reached = {first_rule(name) for name, _ in NAMES}
    unreached = [(i, r.pattern) for i, r in enumerate(cuda_rules.RULES) if i not in reached]
    assert not unreached, f"rules no name in the table reaches first: {unreached}"


def test_the_table_covers_every_category():
    assert {e for _, e in NAMES} == set(CATEGORIES)


@pytest.mark.parametrize("name,expected,generic", ORDER_CASES, ids=[f"{e}-not-{g}" for _, e, g in ORDER_CASES])
def test_specific_rule_wins_over_the_generic_one(name, expected, generic):
    later = [r.category for r in cuda_rules.RULES[first_rule(name) + 1:]
             if re.search(r.pattern, name, re.IGNORECASE if r.ignore_case else 0)]
    assert category(name) == expected
    assert generic in later, f"no later rule would have said {generic}: the case does not test the order"


def test_rules_are_well_formed_and_cite_a_source():
    patterns = [r.pattern for r in cuda_rules.RULES]
    assert len(patterns) == len(set(patterns))
    for r in cuda_rules.RULES:
        re.compile(r.pattern)
        assert len(r.source) > 15 and r.source[0] != " ", r.pattern
