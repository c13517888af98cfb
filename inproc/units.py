"""Context sizes as people write them: ``8K``, ``1M``, ``1019K``, ``1048512``.

K and M are binary (1K = 1024 tokens), as in both published matrices (docs/reference-matrices.md;
1019K = 1,043,456).
"""
from __future__ import annotations

import re

from inproc.errors import UsageError

_SIZE = re.compile(r"^\s*(\d+)\s*([kKmM]?)\s*$")
_MULT = {"": 1, "k": 1024, "m": 1024 * 1024}


def parse_tokens(text: str | int, what: str = "context") -> int:
    """Parse ``8K`` / ``1M`` / ``1048512`` into a positive token count."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        m = _SIZE.match(str(text))
        if not m:
            raise UsageError(
                f"Bad {what} size {text!r}. Use a whole number of tokens, optionally with K or M "
                "(1K = 1024): 8K, 1019K, 1M, 1048512."
            )
        value = int(m.group(1)) * _MULT[m.group(2).lower()]
    if value <= 0:
        raise UsageError(f"Bad {what} size {text!r}: it must be at least 1 token.")
    return value


def parse_token_list(text: str, what: str = "context") -> tuple[int, ...]:
    """Parse a comma-separated list of sizes, e.g. ``256,1K,4K``."""
    items = [t for t in str(text).split(",") if t.strip()]
    if not items:
        raise UsageError(f"Empty {what} list {text!r}. Give comma-separated sizes, e.g. 8K,16K,32K.")
    return tuple(parse_tokens(t, what) for t in items)


def parse_int_list(text: str, what: str = "concurrency") -> tuple[int, ...]:
    """Parse ``1,2,4,8`` into positive integers."""
    out = []
    for t in str(text).split(","):
        t = t.strip()
        if not t:
            continue
        if not t.isdigit() or int(t) < 1:
            raise UsageError(f"Bad {what} {t!r}. Give whole numbers of 1 or more, e.g. 1,2,4,8.")
        out.append(int(t))
    if not out:
        raise UsageError(f"Empty {what} list {text!r}. Give whole numbers, e.g. 1,2,4,8.")
    return tuple(out)


def format_tokens(n: int) -> str:
    """Label a context size the way the published matrices do: 8K, 1024K, else the exact count (1,048,512)."""
    if n % 1024 == 0:
        return f"{n // 1024}K"
    return f"{n:,}"


def parse_cell(text: str) -> tuple[int, int]:
    """Parse one decode cell ``CONTEXTxCONCURRENCY``: ``8Kx16`` -> (8192, 16)."""
    parts = re.split(r"[xX]", str(text).strip())
    hint = "Write CONTEXTxCONCURRENCY, e.g. 8Kx1,8Kx16,32Kx64 (K = 1024 tokens)."
    if len(parts) != 2 or not _SIZE.match(parts[0]) or not parts[1].strip().isdigit():
        raise UsageError(f"Bad cell {text!r}. {hint}")
    context, concurrency = parse_tokens(parts[0]), int(parts[1])
    if concurrency < 1:
        raise UsageError(f"Bad cell {text!r}: concurrency must be at least 1. {hint}")
    return context, concurrency


def parse_cell_list(text: str) -> tuple[tuple[int, int], ...]:
    """Parse ``8Kx1,8Kx16`` into (context, concurrency) pairs; a cell listed twice is an error."""
    items = [t for t in str(text).split(",") if t.strip()]
    if not items:
        raise UsageError(f"Empty cell list {text!r}. Give CONTEXTxCONCURRENCY cells, e.g. 8Kx1,8Kx16.")
    cells = [parse_cell(t) for t in items]
    for i, cell in enumerate(cells):
        if cell in cells[:i]:
            raise UsageError(f"Cell {items[i].strip()!r} is listed twice in {text!r}.")
    return tuple(cells)


def cell_key(context: int, concurrency: int) -> str:
    """``8192x16``: the key a decode cell is planned, stored, resumed and compared under (raw token counts)."""
    return f"{context}x{concurrency}"


def format_cell(context: int, concurrency: int) -> str:
    """``8Kx16``: the form :func:`parse_cell` reads."""
    return f"{format_tokens(context).replace(',', '')}x{concurrency}"
