"""The compute dtype named from the layer methods and kernels an engine chose (engine-neutral rules)."""
from __future__ import annotations

import pytest

from inproc.engines.kernels import LayerKernel, compute_dtype, math_dtype

# (method, kernel or backend names) -> the dtype the products run in, model dtype bf16.
CASES = [
    ("UnquantizedLinearMethod", (), "bf16"),
    ("UnquantizedFusedMoEMethod", (), "bf16"),
    ("Mxfp4MoEMethod", ("MARLIN",), "bf16"),  # FP4 weights, Marlin: weight-only, BF16 math
    ("ModelOptNvFp4LinearMethod", ("MarlinNvFp4LinearKernel",), "bf16"),
    ("CompressedTensorsLinearMethod", ("CompressedTensorsW4A16Fp4",), "bf16"),
    ("Mxfp4MoEMethod", ("FLASHINFER_TRTLLM_MXFP4_BF16",), "bf16"),
    ("Fp8LinearMethod", ("MarlinFP8ScaledMMLinearKernel", "Marlin"), "bf16"),  # FP8 on a GPU without FP8 cores
    ("Fp8LinearMethod", ("CutlassFP8ScaledMMLinearKernel",), "fp8"),
    ("Mxfp4MoEMethod", ("FLASHINFER_TRTLLM_MXFP4_MXFP8",), "fp8"),  # FP4 weights × FP8 activations
    ("CompressedTensorsLinearMethod", ("CompressedTensorsW8A8Fp8",), "fp8"),
    ("ModelOptNvFp4LinearMethod", ("FLASHINFER_CUTLASS",), "fp4"),
    ("CompressedTensorsLinearMethod", ("CompressedTensorsW4A4Fp4",), "fp4"),
    ("Mxfp4MoEMethod", ("CUTLASS_MXFP4_MXFP4",), "fp4"),
    ("CompressedTensorsLinearMethod", ("CompressedTensorsW8A8Int8",), "int8"),
    ("Mxfp4MoEMethod", ("DEEPGEMM_MXFP4",), "unknown"),  # no operand format named: never a guess
    ("SomeNewMethod", (), "unknown"),
]


@pytest.mark.parametrize(("method", "kernel", "expected"), CASES)
def test_math_dtype_follows_the_kernel_not_the_checkpoint(method, kernel, expected):
    assert math_dtype(LayerKernel(method, kernel, 1), "torch.bfloat16") == expected


def test_the_model_dtype_is_the_engine_s():
    assert math_dtype(LayerKernel("UnquantizedLinearMethod"), "float16") == "fp16"
    assert math_dtype(LayerKernel("UnquantizedLinearMethod"), None) == "unknown"


def test_the_dtype_with_most_weight_elements_per_token_wins_and_every_share_is_stated():
    layers = [LayerKernel("UnquantizedLinearMethod", (), 300), LayerKernel("Mxfp4MoEMethod", ("CUTLASS_MXFP4_MXFP4",), 700)]
    dtype, source = compute_dtype(layers, "bfloat16")
    assert dtype == "fp4" and "fp4 70%" in source and "bf16 30%" in source and "Mxfp4MoEMethod (CUTLASS_MXFP4_MXFP4)" in source
    dtype, source = compute_dtype([LayerKernel("UnquantizedLinearMethod", (), 300), LayerKernel("X", (), 700)], "bfloat16")
    assert dtype == "unknown" and "unknown 70% (X)" in source


def test_no_layer_read_is_unknown():
    dtype, source = compute_dtype([], "bfloat16")
    assert dtype == "unknown" and "no linear or MoE layer" in source
