"""Part of the migration (``inproc.record.migrate``): the reader of schema 7 and 8 cell files, read only.

Schema 7 and 8 kept an entry's raw records as one ``.npz`` per entry: a zlib-compressed zip
whose JSON member ``skeleton`` held the records' tree, with ``{"@npz": MEMBER, "at": I,
"n": N}`` marking an array stored as values I..I+N of MEMBER. Arrays were gathered by type
into a few members (``int32``, ``uint16``, ``bool``...); 8-byte columns XOR-delta and
byte-shuffled (``xor8``, its dtype in the skeleton), and (schema 8) float columns of whole
nanoseconds as integer nanoseconds, delta, zigzag and byte-shuffled (``ns8``). Requests
were stored by column: their scalars as JSON lists, ``token_steps`` as differences within
each request, token ids in the narrowest integer type. Schema 9 writes Parquet tables
instead (``inproc.record.cells``); nothing here writes.
"""
from __future__ import annotations

import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from inproc.errors import UsageError

SKELETON = "skeleton"
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


def read_skeleton(path: Path) -> dict[str, Any]:
    """A cell file's JSON values alone (its arrays are not read); a missing or damaged file is a one-line :class:`UsageError`."""
    return _read(path, arrays=False)[0]


def read_cell(path: Path) -> dict[str, Any]:
    """The raw tree of a cell file, its arrays as numpy arrays (no pickles are read); a missing or
    damaged file is a one-line :class:`UsageError` naming it and what is wrong."""
    skeleton, members = _read(path, arrays=True)
    try:
        return _join(skeleton, _unshuffled_groups(members))
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise UsageError(f"{path}: not a cell file (its skeleton and arrays disagree: {type(e).__name__}: "
                         f"{_one_line(e)}). {_FIX}") from None


#: How a damaged cell file is mended: read only, never rewritten.
_FIX = "Copy the results folder again from where the run wrote it, or measure the cell again."
#: What a zip archive can raise when its bytes are cut short or changed (numpy's own checks raise ValueError).
_DAMAGED = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error)


def _read(path: Path, arrays: bool) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(the skeleton, the array members when ``arrays``) of a cell file; one-line errors."""
    if not path.is_file():
        raise UsageError(f"{path}: missing cell file (the results file lists it). Copy the folder "
                         f"{path.parent.name}/ beside the results file too.")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if SKELETON not in npz.files:
                raise UsageError(f"{path}: not a cell file (no {SKELETON!r} member). {_FIX}")
            members = {name: npz[name] for name in npz.files} if arrays else {SKELETON: npz[SKELETON]}
        return json.loads(members.pop(SKELETON).tobytes()), members
    except _DAMAGED as e:
        raise UsageError(f"{path}: {_damage(path, e)}. {_FIX}") from None


def _damage(path: Path, error: BaseException) -> str:
    """What is wrong with a cell file numpy cannot read, from its bytes: empty, cut short, foreign or damaged."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(4)
        f.seek(max(0, size - _EOCD_SPAN))
        tail = f.read()
    if size == 0:
        return "empty cell file (an interrupted copy?)"
    if head != b"PK\x03\x04":
        return "not a cell file (not a zip archive)"
    if b"PK\x05\x06" not in tail:  # a zip's directory is at its end: a cut-short file has none
        return "truncated cell file (its end is missing: an interrupted copy?)"
    return f"damaged cell file (a member does not read back: {type(error).__name__}: {_one_line(error)})"


#: A zip's end-of-directory record lies in its last 22 bytes plus a comment of at most 64 KiB.
_EOCD_SPAN = 22 + 65535


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())
