"""Number formats shared by every renderer, matching the reference matrices."""
from __future__ import annotations

DASH = "—"


def tok_s(v: float | None) -> str:
    """Throughput: 1,035.6 below 10K, then 14.3K (the references' style)."""
    if v is None:
        return DASH
    if v >= 10_000:
        return f"{v / 1000:.1f}K".replace(".0K", "K")
    return f"{v:,.1f}"


def ms(v: float | None, digits: int = 0) -> str:
    return DASH if v is None else f"{v:,.{digits}f} ms"


def secs(v: float | None) -> str:
    return DASH if v is None else f"{v:.1f} s"


def num(v: float | int | None, digits: int = 0) -> str:
    if v is None:
        return DASH
    return f"{v:,.{digits}f}" if isinstance(v, float) else f"{v:,}"
