"""Name rules for CUDA device kernels, as the engines and their kernel libraries name them.

Each rule cites the source its name comes from. Order matters: the first match wins, so the
specific rules (a MoE GEMM, an attention kernel built on CUTLASS) come before the generic ones.
"""
from __future__ import annotations

from inproc.kernels.rule import Rule

RULES: tuple[Rule, ...] = ()
