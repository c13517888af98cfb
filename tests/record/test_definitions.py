"""The definitions' version is a digest of the code that derives the cached figures, so a changed
definition cannot be served from a results file's cache."""
from __future__ import annotations

import dataclasses
import re

import pytest

from inproc import types as st
from inproc.record import fromjson, tojson
from inproc.record.definitions import DEFINING_MODULES, DEFINITIONS_VERSION, definitions_digest
from inproc.record.io import load_results, write_results
from tests.conftest import FIXTURES
from tests.test_imports import GRAPH, PACKAGE

SMALL = FIXTURES / "cpu-vllm-small.json"
#: Where a definition may live: what ``derive`` reaches in these is part of the version.
DEFINING_LAYERS = ("inproc.measure.", "inproc.telemetry.")
DEFINING_ALSO = {"inproc.plan.capacity", "inproc.types", "inproc.drafts"}


def _sources() -> list[tuple[str, bytes]]:
    return [(name, (PACKAGE / name).read_bytes()) for name in DEFINING_MODULES]


def _module(path: str) -> str:
    return "inproc." + path.removesuffix(".py").replace("/", ".")


def test_the_version_is_the_digest_of_the_defining_source():
    assert re.fullmatch(r"[0-9a-f]{16}", DEFINITIONS_VERSION)
    assert DEFINITIONS_VERSION == definitions_digest(_sources())
    assert definitions_digest(reversed(_sources())) == DEFINITIONS_VERSION  # the order given does not count


@pytest.mark.parametrize("name", DEFINING_MODULES)
def test_a_changed_definition_changes_the_version(name):
    sources = dict(_sources())
    text = sources[name]
    altered = {**sources, name: text.replace(b"return", b"return  ", 1) if b"return" in text else text + b"\n"}
    assert definitions_digest(altered.items()) != DEFINITIONS_VERSION


def test_text_moved_between_modules_changes_the_version():
    sources = dict(_sources())
    first, second = DEFINING_MODULES[:2]
    moved = {**sources, first: sources[first] + sources[second][:10], second: sources[second][10:]}
    assert definitions_digest(moved.items()) != DEFINITIONS_VERSION  # each module is delimited


def test_the_defining_modules_are_what_derive_reaches():
    """Every module of the defining layers that ``inproc.record.derive`` imports, directly or not, is in the list."""
    reached, todo = set(), ["inproc.record.derive"]
    while todo:
        for nxt in GRAPH[todo.pop()][0]:
            if nxt not in reached:
                reached.add(nxt)
                todo.append(nxt)
    defining = {m for m in reached if m.startswith(DEFINING_LAYERS) or m in DEFINING_ALSO} | {"inproc.record.derive"}
    assert {_module(p) for p in DEFINING_MODULES} == defining


def _file_with_a_planted_cached_figure(tmp_path):
    """A results file whose first Valid cell caches a figure its raw records do not give; (path, key, true figure)."""
    rec = load_results(SMALL)
    e = next(e for e in rec.decode if e.status == st.VALID)
    planted = dataclasses.replace(e, figures=dataclasses.replace(e.figures, total_tok_s=1e9))
    out = tmp_path / "r.json"
    write_results(out, dataclasses.replace(rec, decode=tuple(planted if x is e else x for x in rec.decode)))
    return out, e.key, e.figures.total_tok_s


def _rate(path, key) -> float:
    return next(x for x in load_results(path).decode if x.key == key).figures.total_tok_s


def test_figures_cached_by_other_definitions_are_derived_again(tmp_path, monkeypatch):
    out, key, true_rate = _file_with_a_planted_cached_figure(tmp_path)
    assert _rate(out, key) == 1e9  # today's definitions made the cache: served as written
    changed = definitions_digest([*_sources(), ("measure/metrics.py", b"a changed definition")])
    monkeypatch.setattr(fromjson, "DEFINITIONS_VERSION", changed)  # an inproc whose definitions changed
    assert _rate(out, key) == pytest.approx(true_rate)  # derived afresh from the raw records
    monkeypatch.undo()
    monkeypatch.setattr(tojson, "DEFINITIONS_VERSION", changed)  # a file written by that other inproc
    other, key, true_rate = _file_with_a_planted_cached_figure(tmp_path / "other")
    monkeypatch.undo()
    assert _rate(other, key) == pytest.approx(true_rate)
