"""How raw sample arrays are written into the JSON results file.

An array becomes ``{"dtype": "<f8", "n": 300, "zb64": "..."}``: the array's bytes in
little-endian order, zlib-compressed, then base64. This is exact (the 64-bit energy
counter and the throttle bit masks survive unchanged, which rounded floats in a list
would not) and small: telemetry columns repeat a lot (clocks, reason bits), so a 30 s
cell at 10 Hz costs a few kB per GPU instead of tens.
"""

from __future__ import annotations

import base64
import zlib
from typing import Any, Mapping

import numpy as np


def encode_array(values: np.ndarray) -> dict[str, object]:
    """Encode a 1-D array exactly as dtype + length + base64(zlib(little-endian bytes))."""
    arr = np.ascontiguousarray(values)
    if arr.ndim != 1:
        raise ValueError(f"only 1-D arrays are encoded, got shape {arr.shape}")
    little = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
    payload = zlib.compress(little.tobytes(), 6)
    return {"dtype": little.dtype.str, "n": int(arr.size), "zb64": base64.b64encode(payload).decode("ascii")}


def decode_array(data: Mapping[str, Any]) -> np.ndarray:
    """Inverse of :func:`encode_array`; returns a native-order, writable copy."""
    dtype = np.dtype(str(data["dtype"]))
    raw = zlib.decompress(base64.b64decode(str(data["zb64"])))
    arr = np.frombuffer(raw, dtype=dtype)
    if arr.size != int(data["n"]):
        raise ValueError(f"array holds {arr.size} values, header says {data['n']}")
    return arr.astype(dtype.newbyteorder("="), copy=True)
