"""The variants of a sweep: ``--vary KEY=V1,V2,...`` read, then crossed (product) or paired (``--zip``).

A KEY is an engine argument by its CLI name (``max-num-seqs``), a key inside a table
argument (``compilation-config.cudagraph_capture_sizes``), or ``env.NAME``. Each variant
becomes ``--set KEY=VALUE`` overrides of ``inproc run``, which reads the values (TOML
where they parse, text otherwise) exactly as ``inproc run --set`` does.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from inproc.errors import UsageError

ENV_PREFIX = "env."
KEY_HELP = ("KEY is an engine argument (max-num-seqs), a key inside a table argument "
            "(compilation-config.cudagraph_capture_sizes) or env.NAME")
_ARGUMENT = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ENV = re.compile(r"^env\.[A-Za-z_][A-Za-z0-9_]*$")
_OPEN, _CLOSE = "[{(", "]})"
_FILE_CHARS = re.compile(r"[^A-Za-z0-9._=+-]+")


@dataclass(frozen=True)
class Vary:
    """One ``--vary``: a key and its values, as written."""

    key: str
    values: tuple[str, ...]

    @property
    def argument(self) -> str | None:
        """The engine argument the key sets (the table's name for a dotted key); None for ``env.NAME``."""
        return None if self.key.startswith(ENV_PREFIX) else self.key.split(".")[0]


@dataclass(frozen=True)
class Variant:
    """One point of the sweep: its number (from 1), its ``--set KEY=VALUE`` overrides in --vary order,
    and the name of its list of graph sizes (``--graph-sizes``; its overrides come first), if any."""

    index: int
    sets: tuple[str, ...]
    tag: str = ""
    tagged: int = 0  # how many of ``sets`` the tag stands for (the graph-size overrides)
    flags: tuple[str, ...] = ()  # ``inproc run`` flags of its own (``--acceptance 2``), after the sets

    @property
    def name(self) -> str:
        """``max-num-seqs=4 block-size=32`` (``suggested max-num-seqs=4``): how reports name the variant."""
        return " ".join(([self.tag] if self.tag else []) + list(self.sets[self.tagged:])) or "the profile as it is"

    @property
    def label(self) -> str:
        """The values only (``4 · 32``): a chart's tick under the variant."""
        return " · ".join(([self.tag] if self.tag else []) + [s.partition("=")[2] for s in self.sets[self.tagged:]])

    @property
    def file(self) -> str:
        """The variant's results file in the sweep folder, e.g. ``01-max-num-seqs=4.json``."""
        parts = [self.tag] if self.tag else []
        parts += [f"{k.split('.')[-1]}={v}" for k, _, v in (s.partition("=") for s in self.sets[self.tagged:])]
        slug = _FILE_CHARS.sub("_", "_".join(parts)).strip("_")[:60]
        return f"{self.index:02d}-{slug}.json"

    @property
    def log(self) -> str:
        """The child's output, beside its results file."""
        return self.file.removesuffix(".json") + ".log"


def split_values(text: str, item: str) -> tuple[str, ...]:
    """``4,8`` -> ('4', '8'); commas inside brackets or quotes stay in their value: ``[1,2],[4]``."""
    values, current, depth, quote = [], [], 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth < 0:
                raise UsageError(f"Bad --vary {item!r}: {ch!r} closes no bracket. Write a list value as [1,2,4].")
        elif ch == "," and depth == 0:
            values.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if depth or quote:
        raise UsageError(f"Bad --vary {item!r}: an unclosed {'quote' if quote else 'bracket'}. Write a list value as [1,2,4].")
    values.append("".join(current).strip())
    if any(not v for v in values):
        raise UsageError(f"Bad --vary {item!r}: an empty value. Give KEY=V1,V2,... with every value written, e.g. max-num-seqs=4,8.")
    return tuple(values)


def _split_item(item: str) -> tuple[str, str]:
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"Bad --vary {item!r}. Give KEY=V1,V2,..., e.g. --vary max-num-seqs=4,8; {KEY_HELP}.")
    if not (_ENV.match(key) if key.startswith(ENV_PREFIX) else _ARGUMENT.match(key)):
        raise UsageError(f"Bad --vary key {key!r} in {item!r}: {KEY_HELP}.")
    if not raw.strip():
        raise UsageError(f"Bad --vary {item!r}: no values. Give KEY=V1,V2,..., e.g. --vary {key}=4,8.")
    return key, raw


def normal_key(key: str) -> str:
    """One spelling per key: an engine argument's name with dashes (``max_num_seqs`` is ``max-num-seqs``);
    keys inside a table and environment names stay as written."""
    if key.startswith(ENV_PREFIX):
        return key
    top, dot, sub = key.partition(".")
    return top.replace("_", "-") + dot + sub


def parse_varies(items: tuple[str, ...]) -> tuple[Vary, ...]:
    """The ``--vary`` flags, keys in first-given order.

    A key given once lists its values split at commas (outside brackets and quotes); a key
    given again and again holds one whole value per flag, so a value may hold bare commas.
    """
    if not items:
        raise UsageError(f"Give at least one --vary KEY=V1,V2,..., e.g. --vary max-num-seqs=4,8; {KEY_HELP}.")
    given: dict[str, list[tuple[str, str]]] = {}
    for item in items:
        key, raw = _split_item(item)
        given.setdefault(normal_key(key), []).append((item, raw))
    return tuple(Vary(key, _values(key, flags)) for key, flags in given.items())


def _values(key: str, flags: list[tuple[str, str]]) -> tuple[str, ...]:
    values = split_values(flags[0][1], flags[0][0]) if len(flags) == 1 else tuple(raw.strip() for _, raw in flags)
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise UsageError(f"Bad --vary {key}: the value {twice!r} is given twice. Each variant is measured once.")
    return values


def plan_variants(varies: tuple[Vary, ...], zipped: bool = False) -> tuple[Variant, ...]:
    """Every combination of the values (the Cartesian product, first key slowest), or with
    ``zipped`` the i-th value of every key together (all keys need as many values)."""
    if zipped and len({len(v.values) for v in varies}) > 1:
        counts = ", ".join(f"{v.key} has {len(v.values)}" for v in varies)
        raise UsageError(f"--zip pairs the i-th values of every --vary, so they need as many values each: {counts}.")
    columns = [[f"{v.key}={value}" for value in v.values] for v in varies]
    rows = zip(*columns) if zipped else itertools.product(*columns)
    return tuple(Variant(i, tuple(sets)) for i, sets in enumerate(rows, start=1))
