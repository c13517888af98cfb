"""Number formats shared by every renderer, matching the published matrices (docs/reference-matrices.md)."""
from __future__ import annotations

DASH = "—"


def tok_s(v: float | None) -> str:
    """Throughput: 1,035.6 below 10K, then 14.3K (the published matrices' style)."""
    if v is None:
        return DASH
    if v >= 10_000:
        return f"{v / 1000:.1f}K".replace(".0K", "K")
    return f"{v:,.1f}"


def ms(v: float | None, digits: int = 0) -> str:
    """Milliseconds: TTFT as 574 ms (digits=0), time between tokens as 7.2 ms (digits=1)."""
    return DASH if v is None else f"{v:,.{digits}f} ms"


def secs(v: float | None) -> str:
    """Seconds, one decimal: 30.0 s."""
    return DASH if v is None else f"{v:.1f} s"


def num(v: float | int | None, digits: int = 0) -> str:
    if v is None:
        return DASH
    return f"{v:,.{digits}f}" if isinstance(v, float) else f"{v:,}"


def fixed(v: float | None, digits: int = 2) -> str:
    """A plain decimal with thousands separators (Average active requests: 1.02, 128.00)."""
    return DASH if v is None else f"{v:,.{digits}f}"


def pct(v: float | None, digits: int = 1) -> str:
    """A share: 0.0123 -> 1.2%."""
    return DASH if v is None else f"{v * 100:.{digits}f}%"


def unit(v: float | None, name: str, digits: int = 0) -> str:
    """A value with its unit after a space: 612 W, 1,755 MHz, 0.52 J."""
    return DASH if v is None else f"{v:,.{digits}f} {name}"


def joules(v: float | None) -> str:
    """Energy: three significant figures below 100 J (a per-token figure is small), else whole J."""
    if v is None:
        return DASH
    return f"{v:,.0f} J" if abs(v) >= 100 else f"{v:.3g} J"


def gb_s(v: float | None) -> str:
    """Bytes per second as GB/s (10^9), three significant figures: 18.9 GB/s, 4,310 GB/s."""
    if v is None:
        return DASH
    g = v / 1e9
    return f"{g:,.0f} GB/s" if g >= 100 else f"{g:.3g} GB/s"


def flops(v: float | None) -> str:
    """FLOP/s as TFLOP/s (10^12), three significant figures."""
    return DASH if v is None else f"{v / 1e12:.3g} TFLOP/s"


def mib(v: float | None) -> str:
    """Bytes as MiB (resident memory)."""
    return DASH if v is None else f"{v / 2**20:,.0f} MiB"


def percent(v: float | None, digits: int = 1) -> str:
    """A value already in percent: 95.8 -> 95.8%."""
    return DASH if v is None else f"{v:,.{digits}f}%"
