"""CUDA through torch, for the profiling flags (NVTX ranges, the CUDA profiler check).

Here, with the engine adapters, because it imports torch; nothing else outside
``inproc/engines/`` does. Not an engine: the registry only reads subpackages.
"""
from __future__ import annotations

from inproc.errors import UsageError


def why_unavailable() -> str:
    """"" when CUDA is usable in this process, else why not (one clause)."""
    try:
        import torch
    except ImportError as e:
        return f"torch is not installed ({e})"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is False)"
    return ""


def check_for(flag: str) -> None:
    """A one-line error for ``flag`` on a machine without CUDA."""
    why = why_unavailable()
    if why:
        raise UsageError(f"{flag} needs CUDA, and here {why}. Use it on a GPU machine; --profile torch works anywhere.")


def nvtx():
    """``torch.cuda.nvtx`` (range_push / range_pop / mark)."""
    import torch

    return torch.cuda.nvtx
