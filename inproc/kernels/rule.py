"""The categories and the name rule type of the categorizer (``inproc.kernels.categories``, its definition).

Kept apart so that the rule tables (``cuda_rules``, ``cpu_rules``) import them without importing
the categorizer that imports them.
"""
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


