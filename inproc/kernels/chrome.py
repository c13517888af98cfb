"""A torch profiler trace on disk, read: the Chrome trace format that ``export_chrome_trace`` writes.

``.json`` or ``.json.gz``. Timestamps and durations (µs with three decimals) are read from their
text as whole nanoseconds, so nesting and filing compare exact integers (a trace's timestamps
are absolute: near 5.5e12 µs, a double would carry them to about a nanosecond only).
Nothing here knows what an event means: :mod:`inproc.kernels.filing` does.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from typing import Any, Mapping


#: Categories as older torch versions wrote them (capitalized, other words), read as today's.
_LEGACY_CATS = {"operator": "cpu_op", "runtime": "cuda_runtime", "driver": "cuda_driver", "memcpy": "gpu_memcpy",
                "memset": "gpu_memset"}


class TraceError(ValueError):
    """The file is not a torch profiler trace inproc can read (one line, naming the file and why)."""


@dataclass(frozen=True)
class TraceEvent:
    """One complete event (``ph`` "X") of a trace: its category, name, span in ns, thread and correlation."""

    cat: str
    name: str
    start_ns: int
    dur_ns: int
    thread: tuple[Any, Any]  # (pid, tid): a host thread, or a device and its stream
    correlation: int = 0  # args.correlation: a runtime or driver call's CUPTI id, and its device activities'

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns


def _ns(v: Any) -> int:
    """µs as written (a string from the parser, or a number) → whole ns."""
    if isinstance(v, str):
        if "e" in v or "E" in v:
            return round(float(v) * 1000)
        whole, _, frac = v.partition(".")
        neg = whole.startswith("-")
        ns = int(whole or "0") * 1000 + (-1 if neg else 1) * int((frac + "000")[:3])
        return ns
    return round(float(v) * 1000)


def events_of(doc: Mapping[str, Any], source: str = "the trace") -> list[TraceEvent]:
    """The complete events of a parsed trace (a dict with ``traceEvents``, or that list itself)."""
    raw = doc.get("traceEvents") if isinstance(doc, Mapping) else doc
    if not isinstance(raw, list):
        raise TraceError(f"{source}: not a torch profiler trace (no traceEvents list)")
    out = []
    for e in raw:
        if not isinstance(e, Mapping) or e.get("ph") != "X" or "ts" not in e:
            continue
        args = e.get("args") if isinstance(e.get("args"), Mapping) else {}
        corr = args.get("correlation", 0)
        cat = str(e.get("cat", "")).lower()
        out.append(TraceEvent(_LEGACY_CATS.get(cat, cat), str(e.get("name", "")), _ns(e["ts"]), _ns(e.get("dur", 0)),
                              (e.get("pid"), e.get("tid")), int(corr) if str(corr).lstrip("-").isdigit() else 0))
    return out


def load_trace(path: str) -> list[TraceEvent]:
    """The complete events of the trace at ``path``; :class:`TraceError` (one line) when it is not one."""
    try:
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            doc = json.load(f, parse_float=str)  # µs kept as written: :func:`_ns` reads them exactly
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TraceError(f"{path}: not a torch profiler trace ({type(e).__name__}: {' '.join(str(e).split())})") \
            from None
    return events_of(doc, str(path))
