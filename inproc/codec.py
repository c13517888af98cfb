"""Array and dataclass codecs shared by every layer that stores raw data (``measure``, ``telemetry``, ``record``).

An array is written as ``{"dtype": "<f8", "n": 300, "zb64": "..."}``: its little-endian
bytes, zlib-compressed, then base64. That is exact (64-bit counters and bit masks survive
unchanged, which rounded floats in a list would not) and small: step times, token ids
and telemetry columns repeat a lot. Version-1 files also hold ``{"dtype", "b64"}``
(uncompressed), which :func:`decode_array` reads too. A JSON object becomes a dataclass
through :func:`known_fields`, so keys another version wrote are passed over.
"""
from __future__ import annotations

import base64
import dataclasses
import zlib
from typing import Any, Mapping

import numpy as np


def encode_array(values) -> dict[str, object]:
    """Encode a 1-D array exactly as dtype + length + base64(zlib(little-endian bytes))."""
    arr = np.ascontiguousarray(values)
    if arr.ndim != 1:
        raise ValueError(f"only 1-D arrays are encoded, got shape {arr.shape}")
    little = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
    payload = zlib.compress(little.tobytes(), 6)
    return {"dtype": little.dtype.str, "n": int(arr.size), "zb64": base64.b64encode(payload).decode("ascii")}


def decode_array(data: Mapping[str, Any]) -> np.ndarray:
    """Inverse of :func:`encode_array` (and of version 1's ``b64`` form); a native-order, writable copy.

    An array already decoded (read from a cell file, ``inproc.record.files``) is returned as it is.
    """
    if isinstance(data, np.ndarray):
        return data
    dtype = np.dtype(str(data["dtype"]))
    if "zb64" in data:
        raw = zlib.decompress(base64.b64decode(str(data["zb64"])))
    else:
        raw = base64.b64decode(str(data["b64"]))
    arr = np.frombuffer(raw, dtype=dtype)
    if "n" in data and arr.size != int(data["n"]):
        raise ValueError(f"array holds {arr.size} values, header says {data['n']}")
    return arr.astype(dtype.newbyteorder("="), copy=True)


def known_fields(cls, d: Mapping[str, Any]) -> dict[str, Any]:
    """The items of ``d`` that name a field of the dataclass ``cls`` (others are dropped)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}
