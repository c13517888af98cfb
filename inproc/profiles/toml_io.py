"""Write a profile as TOML (``tomllib`` only reads): the handful of value types profiles hold."""
from __future__ import annotations

import json
import math
import re

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_WIDTH = 88


def key(name: str) -> str:
    return name if _BARE_KEY.match(name) else _string(name)


def _string(text: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes; DEL is the one control
    # character JSON leaves raw that TOML forbids.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def value(v: object, indent: int = 0) -> str:
    """One TOML value: strings, numbers, booleans, arrays (wrapped), inline tables."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return _array([value(x, indent + 4) for x in v], indent)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{key(k)} = {value(x, indent)}" for k, x in v.items()) + " }" if v else "{}"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _array(items: list[str], indent: int) -> str:
    flat = "[" + ", ".join(items) + "]"
    if len(flat) + indent <= _WIDTH or any("\n" in i for i in items):
        return flat
    lines, line = [], ""
    for item in items:
        piece = item + ","
        if line and len(line) + 1 + len(piece) > _WIDTH - 4:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    lines.append(line)
    pad = " " * (indent + 4)
    return "[\n" + "\n".join(pad + ln for ln in lines) + "\n" + " " * indent + "]"


def table(name: str, entries: dict[str, object], comments: dict[str, str] | None = None) -> list[str]:
    """``[name]`` with its scalar/array entries, then ``[name.sub]`` for each table-valued entry."""
    comments = comments or {}
    out = [f"[{name}]"]
    subtables = {k: v for k, v in entries.items() if isinstance(v, dict) and v}
    for k, v in entries.items():
        if k in subtables:
            continue
        note = f"  # {comments[k]}" if k in comments else ""
        out.append(f"{key(k)} = {value(v)}{note}")
    for k, v in subtables.items():
        out += ["", f"[{name}.{key(k)}]"]
        out += [f"{key(sk)} = {value(sv)}" for sk, sv in v.items()]
    return out
