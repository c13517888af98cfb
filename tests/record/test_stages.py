"""Reading a results file is three stages called in one direction, and no module both writes and reads.

Checked on the source (``ast``), so a new import or a new module that breaks the layout of
``docs/layout.md`` fails here: every module of ``inproc/record/`` has its place; a stage imports
no later stage, no driver and no writer; the shared modules import no stage; no reader
reaches a writer by any chain of imports; the modules that write files and those that read
them are apart; and the loader calls the three stages once each, in order.
"""
from __future__ import annotations

import ast
from pathlib import Path

import inproc.record

RECORD = Path(inproc.record.__file__).parent

#: Reading's stages: 1 bytes to documents, 2 the document at today's schema, 3 the typed record.
STAGES = {"files": 1, "contain": 1,
          "document": 2, "migrate": 2, "migrate_cells": 2, "fromtables": 2,
          "fromjson": 3, "derive": 3, "cached": 3, "scope": 3}
SHARED = {"damage", "layout", "tables", "schema", "definitions", "compact"}  # values and names every side uses
DRIVER = {"load"}  # calls the stages
READERS = {"notebook", "baseline"}  # built on the driver
WRITERS = {"write", "cells", "atomic", "claim", "summary"}
PURE = {"tojson", "summarize", "merge"}  # records to JSON or to other records: no file opened
FACADE = {"io", "__init__"}  # public names, no code
#: Calls that write a file, and calls that read one (of the record's own functions, os, numpy, pyarrow, pathlib).
WRITE_CALLS = {"write_atomic", "write_text_atomic", "write_cell", "os.replace", "os.fsync", "fsync_dir", "fcntl.flock",
               "shutil.rmtree", "ParquetWriter", "write_text", "write_bytes"}
READ_CALLS = {"read_json", "read_files", "read_cell", "read_skeleton", "read_arrow", "load_results", "record_from_json",
              "read_text", "read_bytes", "load", "ParquetFile", "read_table"}


def _tree(module: str) -> ast.Module:
    return ast.parse((RECORD / f"{module}.py").read_text())


def _imports(module: str) -> set[str]:
    """The ``inproc.record`` modules ``module`` imports at run time (not under ``if TYPE_CHECKING``)."""
    out: set[str] = set()
    tree = _tree(module)
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and getattr(node.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "inproc.record":
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("inproc.record."):
            out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[2] for a in node.names if a.name.startswith("inproc.record.")}
    return out


def _reached(module: str) -> set[str]:
    """Every ``inproc.record`` module ``module`` reaches by imports, directly or not."""
    seen, todo = set(), [module]
    while todo:
        for m in _imports(todo.pop()) - seen:
            seen.add(m)
            todo.append(m)
    return seen


def _calls(module: str) -> set[str]:
    """The names the module calls: ``f``, ``obj.f`` and ``f`` alone for a method."""
    names = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                names.add(f"{f.value.id}.{f.attr}")
    return names


def test_every_module_of_the_record_has_its_place():
    placed = set(STAGES) | SHARED | DRIVER | READERS | WRITERS | PURE | FACADE
    assert {p.stem for p in RECORD.glob("*.py")} == placed


def test_a_stage_imports_no_later_stage_no_driver_and_no_writer():
    for module, stage in STAGES.items():
        for m in _imports(module):
            assert m in SHARED or STAGES.get(m, 99) <= stage, f"{module} (stage {stage}) imports {m}"


def test_the_shared_modules_import_no_stage():
    for module in SHARED:
        assert _imports(module) <= SHARED, f"{module} imports {_imports(module) - SHARED}"


def test_no_reader_reaches_a_writer():
    for module in set(STAGES) | SHARED | DRIVER | READERS:
        assert not _reached(module) & WRITERS, f"{module} reaches {_reached(module) & WRITERS}"


def test_no_writer_reaches_the_readers_entry_points():
    for module in WRITERS | PURE:
        assert not _reached(module) & ({"files", "document", "fromjson"} | DRIVER | READERS), module


def test_no_module_both_writes_and_reads():
    writes = {m for m in {p.stem for p in RECORD.glob("*.py")} if _calls(m) & WRITE_CALLS}
    reads = {m for m in {p.stem for p in RECORD.glob("*.py")} if _calls(m) & READ_CALLS}
    assert writes == WRITERS, writes ^ WRITERS
    assert not writes & reads, writes & reads
    assert reads - {"definitions"} <= set(STAGES) | DRIVER | READERS, reads  # definitions reads inproc's own source


def test_the_facade_holds_names_alone():
    tree = _tree("io")
    assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Assign))
                and not (isinstance(n, ast.Assign) and n.targets[0].id == "__all__")]


def test_the_loader_calls_the_three_stages_once_each_in_order():
    fn = next(n for n in ast.walk(_tree("load")) if isinstance(n, ast.FunctionDef) and n.name == "record_from_json")
    calls = [n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    stages = [c for c in calls if c in ("read_files", "current", "from_json")]
    assert stages == ["read_files", "current", "from_json"]
    lines = {c: next(n.lineno for n in ast.walk(fn) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == c)
             for c in stages}
    assert lines["read_files"] < lines["current"] < lines["from_json"]
