"""The kernels vLLM chose for the built model's linear and MoE layers (``inproc.engines.kernels``).

Read on each worker through ``LLMEngine.apply_model`` (the model runner's model, in this
process at tensor parallel 1, in the worker processes otherwise), after the build, so the
methods have picked their kernels (``create_weights`` / ``process_weights_after_loading``).
Written against vLLM 0.32.0: a linear layer's method is a ``LinearMethodBase``, an MoE
layer's a ``FusedMoEMethodBase``; embeddings, the LM head and the KV cache's methods are
neither and are not read.
"""
from __future__ import annotations

from inproc.engines.kernels import UNKNOWN, LayerKernel, compute_dtype

#: Attributes where vLLM's quantization methods keep the kernel object they chose.
KERNEL_ATTRIBUTES = ("kernel", "fp8_linear", "linear_kernel", "moe_kernel", "experts_cls")
#: Attributes where they keep the backend they chose, an enum or a string.
BACKEND_ATTRIBUTES = ("backend", "mxfp4_backend", "fp8_backend", "nvfp4_backend", "moe_backend")


def kernel_names(method, layer) -> tuple[str, ...]:
    """The kernel class, backend and compressed-tensors scheme ``method`` chose for ``layer``."""
    found = []
    for attr in KERNEL_ATTRIBUTES:
        value = getattr(method, attr, None)
        if value is not None:
            found.append(value.__name__ if isinstance(value, type) else type(value).__name__)
    for attr in BACKEND_ATTRIBUTES:
        value = getattr(method, attr, None)
        if value is not None and not callable(value):
            found.append(str(getattr(value, "value", value)))
    scheme = getattr(layer, "scheme", None)
    if scheme is not None:
        found.append(type(scheme).__name__)
    if getattr(method, "use_marlin", False):
        found.append("Marlin")
    return tuple(dict.fromkeys(found))


def _elements(method, layer, moe: bool) -> int:
    """Weight elements a token multiplies through ``layer`` on this rank (MoE: its active experts)."""
    if moe:
        cfg = getattr(method, "moe", None)
        inter = getattr(cfg, "intermediate_size_per_partition", None) or getattr(cfg, "intermediate_size", 0)
        gated = bool(getattr(getattr(cfg, "activation", None), "is_gated", True))
        return int(getattr(cfg, "experts_per_token", 0) or 0) * int(getattr(cfg, "hidden_dim", 0) or 0) \
            * int(inter or 0) * (3 if gated else 2)
    return int(getattr(layer, "input_size_per_partition", 0) or 0) * int(getattr(layer, "output_size_per_partition", 0) or 0)


def layer_kernels(model) -> list[LayerKernel]:
    """Each linear and MoE layer of ``model`` with its method and the kernel that method chose."""
    from vllm.model_executor.layers.fused_moe.fused_moe_method_base import FusedMoEMethodBase
    from vllm.model_executor.layers.linear import LinearMethodBase

    out = []
    for module in model.modules():
        method = getattr(module, "quant_method", None)
        moe = isinstance(method, FusedMoEMethodBase)
        if moe or isinstance(method, LinearMethodBase):
            out.append(LayerKernel(type(method).__name__, kernel_names(method, module), _elements(method, module, moe)))
    return out


def read_compute_dtype(llm_engine, model_dtype: str | None) -> tuple[str, str]:
    """The compute dtype of the built model, read on its first worker; unknown, with the reason, when unreadable."""
    try:
        per_worker = llm_engine.apply_model(layer_kernels)
    except Exception as e:  # an engine piece this build lacks: say so, never guess
        return UNKNOWN, f"the layers' kernels could not be read from vLLM ({type(e).__name__}: {e})"
    if not per_worker:
        return UNKNOWN, "vLLM returned no worker's model to read the layers' kernels from"
    return compute_dtype(per_worker[0], model_dtype)
