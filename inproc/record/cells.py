"""One entry's raw records as one ``.npz`` file, written once (schema 7 on; see ``inproc.record.migrate``).

The raw records of an entry (a decode cell's trace, a prefill entry's samples, the
telemetry samples of either) are a tree of JSON values and arrays, as their ``to_dict``
methods write them. A cell file holds every array of that tree as an ``.npy`` member of a
zlib-compressed zip (``numpy.savez_compressed``: numpy reads it without Python lists, and
``allow_pickle`` stays off), and the rest of the tree as the JSON member ``skeleton``,
where ``{"@npz": MEMBER, "at": I, "n": N}`` marks the array stored as values I..I+N of
MEMBER (arrays are gathered by type into a few members, see ``_Groups``).

Requests are stored by column, not one member per request: their scalars as JSON lists,
their token arrays concatenated with each request's lengths. ``token_steps`` is stored as
differences within each request (mostly 0 and 1, which compress to almost nothing) and
``token_ids`` in the narrowest integer type that holds them. A float column whose every value
is a whole number of nanoseconds (the step times, which are measured on that grid:
``inproc.measure.steps.on_ns_grid``) is stored as integer nanoseconds, delta, zigzag and
byte-shuffled (``ns8``): a CPU step's six times take about 13 bytes instead of 24. Other
columns of 8-byte values (counters, telemetry) are stored XOR-delta and byte-shuffled
(``xor8`` in the skeleton names the dtype). Every value reads back exactly, so figures
derived again from the file equal those derived when measured.
"""
from __future__ import annotations

import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from inproc.codec import decode_array
from inproc.errors import UsageError
from inproc.record.atomic import write_atomic

SKELETON = "skeleton"
_ARRAY = "@npz"
_TOKEN_ARRAYS = ("token_steps", "token_counts", "token_ids")
_PACKED = "@requests"


def _is_encoded(x: dict) -> bool:
    return "dtype" in x and ("zb64" in x or "b64" in x)


def _xor_shuffled(a: np.ndarray) -> np.ndarray:
    """An 8-byte column, each value XORed with the one before, its bytes grouped by position.

    Lossless; neighbouring step times and counters share their high bytes, which then
    become runs of zeros that zlib compresses well (as Gorilla and Blosc's shuffle do)."""
    u = np.ascontiguousarray(a).view(np.uint64)
    return _byte_shuffled(u ^ np.concatenate([np.zeros(1, np.uint64), u[:-1]]))


def _byte_shuffled(u: np.ndarray) -> np.ndarray:
    """8-byte values as 8 rows: every value's first byte, then every value's second, ... (little-endian)."""
    return u.astype("<u8", copy=False).view(np.uint8).reshape(-1, 8).T.copy()


def _byte_unshuffled(b: np.ndarray) -> np.ndarray:
    """The little-endian uint64 values of :func:`_byte_shuffled`'s rows."""
    return np.ascontiguousarray(b.T).view("<u8").ravel()


#: Largest nanosecond count kept as ``ns8``: below 2**53 a count and its float64 seconds map one to one.
_NS_LIMIT = 2.0**53 / 1e9


def _whole_ns(a: np.ndarray) -> np.ndarray | None:
    """``a`` (float64 seconds) as int64 nanoseconds if every value is finite and on the grid, else None."""
    if a.dtype != np.float64 or not np.all(np.isfinite(a)) or np.any(np.abs(a) >= _NS_LIMIT):
        return None
    ns = np.round(a * 1e9)
    return ns.astype(np.int64) if np.array_equal(ns / 1e9, a) else None


def _ns_shuffled(ns: np.ndarray) -> np.ndarray:
    """Integer nanoseconds as differences from the value before, zigzagged (small either side of 0), byte-shuffled."""
    d = np.diff(ns, prepend=np.int64(0))
    return _byte_shuffled(((d << 1) ^ (d >> 63)).view(np.uint64))


class _Groups:
    """Arrays gathered by type into a few members: one per dtype, one each for ``ns8`` and ``xor8`` columns.

    Reading an ``.npz`` member costs a header parse and a zip lookup; a GPU cell has a
    hundred telemetry columns, so each becomes a slice (``at``, ``n``) of its group's member."""

    def __init__(self) -> None:
        self.pieces: dict[str, list[np.ndarray]] = {}
        self.sizes: dict[str, int] = {}

    def add(self, arr: np.ndarray) -> dict[str, Any]:
        ns = _whole_ns(arr) if arr.dtype.kind == "f" and arr.ndim == 1 and arr.size > 1 else None
        if ns is not None:
            key, piece, extra = "ns8", _ns_shuffled(ns), {"ns8": True}
        elif arr.dtype.itemsize == 8 and arr.dtype.kind in "fiu" and arr.size > 1:
            key, piece, extra = "xor8", _xor_shuffled(arr), {"xor8": arr.dtype.newbyteorder("<").str}
        else:
            key, piece, extra = arr.dtype.name, np.ravel(arr).astype(arr.dtype.newbyteorder("<"), copy=False), {}
        at = self.sizes.get(key, 0)
        self.pieces.setdefault(key, []).append(piece)
        self.sizes[key] = at + piece.shape[-1]
        return {_ARRAY: key, "at": at, "n": piece.shape[-1], **extra}

    def members(self) -> dict[str, np.ndarray]:
        return {key: np.concatenate(pieces, axis=-1) for key, pieces in self.pieces.items()}


def _split(tree: Any, groups: _Groups) -> Any:
    """``tree`` with every array (raw or JSON-encoded) moved into ``groups`` and marked where it is."""
    if isinstance(tree, np.ndarray) or (isinstance(tree, dict) and _is_encoded(tree)):
        return groups.add(decode_array(tree) if isinstance(tree, dict) else tree)
    if isinstance(tree, dict):
        if isinstance(tree.get("requests"), list):
            tree = {**tree, "requests": _pack_requests(tree["requests"])}
        return {k: _split(v, groups) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_split(v, groups) for v in tree]
    return tree


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


def _pack_requests(requests: list[dict]) -> dict:
    """Requests by column (see the module docstring)."""
    scalars = {k: [r[k] for r in requests] for k in (requests[0] if requests else {}) if k not in _TOKEN_ARRAYS}
    cols = {k: [np.asarray(decode_array(r[k]) if isinstance(r[k], dict) else r[k]) for r in requests] for k in _TOKEN_ARRAYS}
    arrivals = np.array([a.size for a in cols["token_steps"]], dtype=np.int64)
    steps = np.concatenate(cols["token_steps"]).astype(np.int64) if requests else np.zeros(0, np.int64)
    delta = np.diff(steps, prepend=0)
    starts = np.cumsum(arrivals) - arrivals
    firsts = starts[arrivals > 0]
    delta[firsts] = steps[firsts]
    ids = np.concatenate(cols["token_ids"]).astype(np.int64) if requests else np.zeros(0, np.int64)
    narrow = np.uint16 if ids.size == 0 or (ids.min() >= 0 and ids.max() < 2**16) else np.int32
    counts = np.concatenate(cols["token_counts"]) if requests else np.zeros(0)
    return {_PACKED: {"scalars": scalars, "arrivals": arrivals.astype(np.int32),
                      "tokens": np.array([a.size for a in cols["token_ids"]], dtype=np.int32),
                      "step_deltas": delta.astype(np.int32), "token_counts": counts.astype(np.int32),
                      "token_ids": ids.astype(narrow)}}


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


def write_cell(path: Path, raw: dict[str, Any]) -> int:
    """Write one entry's raw tree as a cell file (temp file, fsync, ``os.replace``); the bytes written."""
    groups = _Groups()
    skeleton = _split(raw, groups)
    arrays = groups.members()
    arrays[SKELETON] = np.frombuffer(json.dumps(skeleton, separators=(",", ":")).encode(), dtype=np.uint8)
    return write_atomic(path, lambda f: np.savez_compressed(f, **arrays))


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
