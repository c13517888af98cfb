"""The categories of kernels and the type of a name rule (the tables are ``cuda_rules`` and ``cpu_rules``)."""
from __future__ import annotations

from dataclasses import dataclass

ATTENTION, MOE, GEMM, COMMUNICATION = "attention", "moe", "gemm", "communication"
SAMPLING, ELEMENTWISE, MEMORY, OTHER = "sampling", "elementwise", "memory", "other"
#: Every category, in the order the report stacks them.
CATEGORIES = (ATTENTION, MOE, GEMM, COMMUNICATION, SAMPLING, ELEMENTWISE, MEMORY, OTHER)


@dataclass(frozen=True)
class Rule:
    """A name rule: ``pattern`` searched in the name gives ``category``; ``source`` says where the name comes from."""

    pattern: str
    category: str
    source: str
    ignore_case: bool = False

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"rule {self.pattern!r}: unknown category {self.category!r}")
