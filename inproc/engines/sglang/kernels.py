"""The kernels SGLang chose for the built model's linear and MoE layers (``inproc.engines.kernels``).

Read on the scheduler's tensor-parallel rank in this process (``tp_worker.model_runner.model``)
after the build. Written against SGLang 0.5.23: a linear layer's method is a
``LinearMethodBase``, an MoE layer's a ``FusedMoEMethodBase``
(``sglang.srt.layers.quantization.base_config``); other methods are not read.
"""
from __future__ import annotations

from inproc.engines.kernels import UNKNOWN, LayerKernel, compute_dtype

#: Attributes where SGLang's quantization methods keep the kernel or backend they chose.
CHOICE_ATTRIBUTES = ("kernel", "backend", "use_marlin", "moe_runner_backend", "runner")


def _choices(method, layer) -> tuple[str, ...]:
    found = []
    for attr in CHOICE_ATTRIBUTES:
        value = getattr(method, attr, None)
        if value is True:
            found.append(attr.removeprefix("use_").capitalize())
        elif value not in (None, False) and not callable(value):
            found.append(str(getattr(value, "value", type(value).__name__ if not isinstance(value, str) else value)))
    scheme = getattr(layer, "scheme", None)
    if scheme is not None:
        found.append(type(scheme).__name__)
    return tuple(dict.fromkeys(found))


def _elements(layer, moe: bool) -> int:
    if moe:
        return int(getattr(layer, "top_k", 0) or 0) * int(getattr(layer, "hidden_size", 0) or 0) \
            * int(getattr(layer, "intermediate_size_per_partition", 0) or 0) * 3
    return int(getattr(layer, "input_size_per_partition", 0) or 0) * int(getattr(layer, "output_size_per_partition", 0) or 0)


def read_compute_dtype(scheduler, model_dtype: str | None) -> tuple[str, str]:
    """The compute dtype of the model on this process's rank; unknown, with the reason, when unreadable."""
    try:
        from sglang.srt.layers.quantization.base_config import FusedMoEMethodBase, LinearMethodBase

        model = scheduler.tp_worker.model_runner.model
        layers = []
        for module in model.modules():
            method = getattr(module, "quant_method", None)
            moe = isinstance(method, FusedMoEMethodBase)
            if moe or isinstance(method, LinearMethodBase):
                layers.append(LayerKernel(type(method).__name__, _choices(method, module), _elements(module, moe)))
    except (ImportError, AttributeError) as e:
        return UNKNOWN, f"the layers' kernels could not be read from SGLang ({type(e).__name__}: {e})"
    return compute_dtype(layers, model_dtype)
