"""Reading, stage 2 (``inproc.record.document``): a schema 7 or 8 cell file brought to today's document.

Schema 7 and 8 kept an entry's raw records as one ``.npz`` per entry: a zlib-compressed zip
whose JSON member ``skeleton`` held the records' tree, with ``{"@npz": MEMBER, "at": I,
"n": N}`` marking an array stored as values I..I+N of MEMBER. Arrays were gathered by type
into a few members (``int32``, ``uint16``, ``bool``...); 8-byte columns XOR-delta and
byte-shuffled (``xor8``, its dtype in the skeleton), and (schema 8) float columns of whole
nanoseconds as integer nanoseconds, delta, zigzag and byte-shuffled (``ns8``). Requests
were stored by column: their scalars as JSON lists, ``token_steps`` as differences within
each request, token ids in the narrowest integer type. The archive is opened and its
members read by ``inproc.record.files``; here they become the raw records' tree, as a
schema-10 cell file's tables do (``inproc.record.fromtables``). Nothing writes this format.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from inproc.record.damage import Damage, one_line

_ARRAY = "@npz"
_PACKED = "@requests"


def _byte_unshuffled(b: np.ndarray) -> np.ndarray:
    """The little-endian uint64 values of 8 byte rows (every value's first byte, then every second, ...)."""
    return np.ascontiguousarray(b.T).view("<u8").ravel()


def _unshuffled_groups(members: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The ``ns8`` and ``xor8`` members with their bytes back in order (and ns8's zigzag undone), once per file.

    Shuffling works value by value, so a column's values are a slice of its unshuffled
    group; :func:`_join` then only undoes the column's own deltas. A telemetry-heavy cell
    has thousands of columns: one pass per group instead of one per column."""
    out = dict(members)
    if "ns8" in out:
        out["ns8"] = _zigzag_deltas(out["ns8"])
    if "xor8" in out:
        out["xor8"] = _byte_unshuffled(out["xor8"])
    return out


def _zigzag_deltas(b: np.ndarray) -> np.ndarray:
    """The nanosecond differences of an ``ns8`` member (each column's first is its first value)."""
    z = _byte_unshuffled(b).astype(np.uint64)
    return (z >> np.uint64(1)).view(np.int64) ^ -(z & np.uint64(1)).view(np.int64)


def _join(tree: Any, members: dict[str, np.ndarray]) -> Any:
    """``tree`` with every array put back from ``members`` (as :func:`_unshuffled_groups` leaves them)."""
    if isinstance(tree, dict):
        if _ARRAY in tree:
            arr = members[tree[_ARRAY]][..., tree["at"]:tree["at"] + tree["n"]]
            if "ns8" in tree:
                return np.cumsum(arr) / 1e9
            if "xor8" in tree:
                dtype = np.dtype(tree["xor8"])
                return np.bitwise_xor.accumulate(arr).view(dtype).astype(dtype.newbyteorder("="))
            return arr
        if _PACKED in tree:
            return _unpack_requests(_join(tree[_PACKED], members))
        return {k: _join(v, members) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_join(v, members) for v in tree]
    return tree


def _segments(values: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    return np.split(values, np.cumsum(lengths)[:-1]) if lengths.size else []


def _unpack_requests(p: dict) -> list[dict]:
    arrivals, tokens = p["arrivals"].astype(np.int64), p["tokens"].astype(np.int64)
    summed = np.cumsum(p["step_deltas"].astype(np.int64))
    starts = np.cumsum(arrivals) - arrivals
    steps = (summed - np.repeat(np.concatenate([[0], summed])[starts], arrivals)).astype(np.int32)
    cols = {"token_steps": _segments(steps, arrivals), "token_counts": _segments(p["token_counts"], arrivals),
            "token_ids": _segments(p["token_ids"].astype(np.int32), tokens)}
    scalars = p["scalars"]
    return [{**{k: v[i] for k, v in scalars.items()}, **{k: c[i] for k, c in cols.items()}} for i in range(arrivals.size)]


def cell_tree(path: Path, skeleton: dict[str, Any], members: dict[str, np.ndarray]) -> dict[str, Any] | Damage:
    """The raw tree of the cell file at ``path`` (``created``, ``entry``, ``trace`` or ``samples``,
    ``telemetry``), its arrays as numpy arrays, from its skeleton and array members; a damage
    where they disagree."""
    try:
        return _join(skeleton, _unshuffled_groups(members))
    except (KeyError, IndexError, TypeError, ValueError) as e:
        return Damage(path, "foreign", f"its skeleton and arrays disagree: {type(e).__name__}: {one_line(e)}")
