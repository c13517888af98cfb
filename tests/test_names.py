"""Every name a function reads is defined somewhere it can see: a local, an enclosing
function's, the module's, or a builtin.

Python finds an undefined name only when the line runs; a benchmark or fixture script
run by hand once a month is where one hides (``bench.py fidelity`` lost its
``import itertools`` that way). Scopes come from the compiler's own ``symtable``.
"""
from __future__ import annotations

import builtins
import symtable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(p for d in ("inproc", "scripts", "tests") for p in (ROOT / d).rglob("*.py"))
_MODULE_DUNDERS = {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__",
                   "__path__", "__annotations__", "__dict__", "__class__"}


def undefined_names(source: str, filename: str) -> list[str]:
    """``name (function)`` for each global a function or class body reads that the module never binds."""
    top = symtable.symtable(source, filename, "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    known = bound | set(dir(builtins)) | _MODULE_DUNDERS
    if any(s.get_name() == "*" for s in top.get_symbols()):
        return []  # a star import binds what it likes
    found: list[str] = []

    def walk(table: symtable.SymbolTable) -> None:
        for child in table.get_children():
            for sym in child.get_symbols():
                if sym.is_referenced() and sym.is_global() and not sym.is_assigned() and sym.get_name() not in known:
                    found.append(f"{sym.get_name()} ({child.get_name()})")
            walk(child)

    walk(top)
    return found


def test_no_undefined_names() -> None:
    found = {str(p.relative_to(ROOT)): undefined_names(p.read_text(), str(p)) for p in FILES}
    assert len(FILES) > 200 and {k: v for k, v in found.items() if v} == {}


def test_a_planted_undefined_name_is_found() -> None:
    source = "import os\n\ndef run():\n    return itertools.product(os.sep)\n\nclass A:\n    x = missing\n"
    assert undefined_names(source, "planted.py") == ["itertools (run)", "missing (A)"]
