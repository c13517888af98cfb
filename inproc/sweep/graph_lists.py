"""``inproc sweep --graph-sizes``: lists of CUDA-graph capture sizes as variants, one engine each.

The value is a sizes file written by ``inproc graphs --sweep-file`` (every list in it),
``FILE:NAME,NAME`` (those lists of it), or items split at commas outside brackets: ``captured``
(the profile's own list, nothing overridden) and bracketed lists (``[1,2,4,8]``). Each list
becomes the engine's ``--set`` overrides (``EngineAdapter.graph_size_sets``), crossed with the
``--vary`` variants, the lists slowest. A list named ``captured`` with no sizes (a run that
captured nothing) is the profile as it is.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from inproc.errors import UsageError
from inproc.graphs.analysis import CAPTURED
from inproc.graphs.padding import parse_sizes
from inproc.graphs.sweepfile import NamedList, read_sizes_file
from inproc.sweep.plan import Variant, split_values

FORMS = ("give a sizes file ('inproc graphs RESULTS --sweep-file FILE'), FILE:NAME,NAME for some of its lists, "
         "or captured and bracketed lists, e.g. --graph-sizes 'captured,[1,2,4,8]'")


def _from_file(path: Path, names: str | None) -> tuple[NamedList, ...]:
    _, lists = read_sizes_file(path)
    if names is None:
        return lists
    by_name = {n.name: n for n in lists}
    wanted = split_values(names, f"--graph-sizes {path}:{names}")
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        raise UsageError(f"Bad --graph-sizes: {path} has no list {unknown[0]!r}. Its lists: {', '.join(by_name)}.")
    return tuple(by_name[w] for w in wanted)


def _item(item: str, given: int) -> NamedList:
    if item == CAPTURED:
        return NamedList(CAPTURED, ())
    if item.startswith("["):
        return NamedList(f"list-{given}", parse_sizes(item, "--graph-sizes"))
    raise UsageError(f"Bad --graph-sizes item {item!r}: no such file or list; {FORMS}.")


def parse_graph_sizes(text: str) -> tuple[NamedList, ...]:
    """The lists ``--graph-sizes`` names (see the module docstring); one-line errors."""
    if not text.strip():
        raise UsageError(f"Empty --graph-sizes: {FORMS}.")
    if Path(text).is_file():
        return _from_file(Path(text), None)
    head, sep, names = text.rpartition(":")
    if sep and Path(head).is_file():
        lists = _from_file(Path(head), names)
    else:
        items = split_values(text, f"--graph-sizes {text}")
        lists = tuple(_item(item, i) for i, item in enumerate(items, start=1))
    twice = next((n.name for i, n in enumerate(lists) if n.name in [m.name for m in lists[:i]]), None)
    if twice is not None:
        raise UsageError(f"Bad --graph-sizes: the list {twice!r} is given twice. Each list is measured once.")
    return lists


def graph_variants(lists: tuple[NamedList, ...], sets_of: Callable[[tuple[int, ...]], tuple[str, ...]],
                   varied: tuple[Variant, ...]) -> tuple[Variant, ...]:
    """One variant per list and ``--vary`` variant (the lists slowest), numbered from 1."""
    out = []
    for g in lists:
        own = sets_of(g.sizes)
        for v in varied or (Variant(0, ()),):
            out.append(Variant(len(out) + 1, own + v.sets, g.name, len(own)))
    return tuple(out)
