"""The dtype a built model's matmuls run in, read from the kernels the engine chose for its layers.

A checkpoint's quantization does not say which math ran: vLLM runs many FP4 and FP8
checkpoints weight-only through Marlin (weights dequantized inside the kernel, products in
the activation dtype, BF16 or FP16) where the GPU lacks the native path, e.g. FP4 on SM120
and Hopper. So each engine adapter lists its built model's linear and MoE layers with the
method class the engine gave each and the kernel or backend that method chose
(:class:`LayerKernel`), and :func:`compute_dtype` names the math dtype from those names
alone. A name it does not recognise is "unknown", never a guess from the checkpoint.

Engine-neutral and import-free: the adapters (``engines/vllm/kernels.py``,
``engines/sglang/kernels.py``) do the reading.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from inproc.measure.peaks import short_dtype

UNKNOWN = "unknown"

# Markers read in the upper-cased names of a method and its kernel, in this order.
# Weight-only formats: the kernel dequantizes, the products run in the activation dtype.
_MODEL_DTYPE_MARKERS = ("UNQUANTIZED", "MARLIN", "W4A16", "WNA16", "W8A16", "A16", "_BF16", "BF16")
# Activations quantized to FP8 (FP8 × FP8, or FP4 weights × FP8 activations): FP8 math.
_FP8_MARKERS = ("MXFP8", "A8FP8", "W8A8FP8", "W8A8_FP8", "FP8")
# Both operands in FP4 (NVFP4 and MXFP4 w4a4 methods and backends): FP4 math.
_FP4_MARKERS = ("W4A4", "MXFP4_MXFP4", "NVFP4", "FP4LINEAR")
_INT8_MARKERS = ("W8A8INT8", "INT8")


@dataclass(frozen=True)
class LayerKernel:
    """One linear or MoE layer of the built model, as the engine set it up."""

    method: str  # the class name of the layer's quantization method ("UnquantizedLinearMethod")
    kernel: tuple[str, ...] = ()  # what the method chose: kernel class, backend, scheme names
    elements: int = 0  # weight elements one token multiplies through the layer on this rank

    def names(self) -> str:
        """``Fp8LinearMethod`` or ``Fp8LinearMethod (MarlinFP8ScaledMMLinearKernel)``."""
        return f"{self.method} ({', '.join(self.kernel)})" if self.kernel else self.method


def math_dtype(layer: LayerKernel, model_dtype: str | None) -> str:
    """The dtype ``layer``'s products run in: the model's, fp8, fp4, int8 or unknown."""
    text = " ".join((layer.method, *layer.kernel)).upper()
    if any(m in text for m in _MODEL_DTYPE_MARKERS):
        return short_dtype(model_dtype) or UNKNOWN
    if any(m in text for m in _FP8_MARKERS):
        return "fp8"
    if any(m in text for m in _FP4_MARKERS):
        return "fp4"
    if any(m in text for m in _INT8_MARKERS):
        return "int8"
    return UNKNOWN


def compute_dtype(layers: Iterable[LayerKernel], model_dtype: str | None) -> tuple[str, str]:
    """The math dtype of most of a token's weight elements, and where it was read from.

    Layers are weighted by the weight elements a token multiplies through them (a linear
    layer's input × output on this rank; an MoE layer's active experts), so a model whose
    experts run FP4 and whose attention runs BF16 is read as FP4 with both shares stated.
    The unknown share wins like any other: then the dtype is unknown.
    """
    layers = list(layers)
    if not layers:
        return UNKNOWN, "the built model has no linear or MoE layer whose method inproc could read"
    elements: dict[str, int] = defaultdict(int)
    names: dict[str, set[str]] = defaultdict(set)
    for layer in layers:
        dtype = math_dtype(layer, model_dtype)
        elements[dtype] += max(layer.elements, 0)
        names[dtype].add(layer.names())
    total = sum(elements.values())
    ranked = sorted(elements, key=lambda d: (-elements[d], d))
    shares = "; ".join(f"{d} {elements[d] / total:.0%} ({', '.join(sorted(names[d]))})" if total
                       else f"{d} ({', '.join(sorted(names[d]))})" for d in ranked)
    return ranked[0], f"from the layer methods the engine chose, by weight elements per token: {shares}"
