"""The house rules, read from the code itself: no import circle (between modules or between
packages), engines only under ``inproc/engines/``, pure layers free of engine code, small modules and functions.

Every ``import`` counts, also one inside a function (a lazy import is still a dependency).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from inproc import engines

PACKAGE = Path(__file__).resolve().parents[1] / "inproc"
ENGINES_DIR = PACKAGE / "engines"
# Packages only the engine adapters (and telemetry's NVML reader) may import.
HEAVY = {"vllm", "sglang", "torch", "pynvml", "triton", "transformers", "zmq"}
PURE_LAYERS = ("plan", "measure", "record", "render", "sweep", "compare", "history", "bisect", "graphs")
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 50


def _modules() -> dict[str, Path]:
    mods = {}
    for p in PACKAGE.rglob("*.py"):
        name = ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


MODULES = _modules()


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def _imports(name: str, path: Path) -> tuple[set[str], set[str]]:
    """(inproc modules imported, top-level packages imported) by one module, anywhere in it."""
    internal, external = set(), set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            stem = ".".join(filter(None, [base, node.module or ""]))
            targets = [stem] + [f"{stem}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            if name.startswith(t + "."):
                continue  # a module's own package: Python has imported it already, it is no dependency
            if t in MODULES and t != name:
                internal.add(t)
                # Importing a.b.c runs the __init__ of a.b as well: that is a dependency too.
                internal.update(p for p in _parents(t) if p in MODULES and not name.startswith(p + ".") and p != name)
            elif not t.startswith("inproc"):
                external.add(t.split(".")[0])
    return internal, external


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _reach(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in GRAPH[todo.pop()][0]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _is_package_of(a: str, b: str) -> bool:
    return b.startswith(a + ".")


def test_no_import_circle():
    circles = []
    for name in GRAPH:
        for other in _reach(name):
            # A package's __init__ may name its own submodules lazily (an adapter's modules).
            if name in _reach(other) and not (_is_package_of(name, other) or _is_package_of(other, name)):
                circles.append(tuple(sorted((name, other))))
    assert not sorted(set(circles)), f"import circles: {sorted(set(circles))[:5]}"


def package_of(module: str) -> str:
    """The package a module counts for: ``inproc.measure.steps`` -> ``inproc.measure``; a top-level
    module (``inproc.types``) and the root are their own; engine adapters count as ``inproc.engines``."""
    return ".".join(module.split(".")[:2])


def package_cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The package-level import cycles of a module graph (module -> modules it imports), each
    as the sorted packages of one strongly connected component of more than one package."""
    edges: dict[str, set[str]] = {}
    for mod, targets in graph.items():
        a = package_of(mod)
        edges.setdefault(a, set()).update(b for b in map(package_of, targets) if b != a)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {p: reach(p) for p in edges}
    return sorted({tuple(sorted({p} | {q for q in reached[p] if p in reached.get(q, ())}))
                   for p in edges if p in reached[p]})


def test_package_cycle_check_finds_a_planted_cycle():
    """The check sees a cycle that goes through different modules of two packages (no module cycle)."""
    clean = {"inproc.a.x": {"inproc.b.y"}, "inproc.b.y": {"inproc.types"}, "inproc.b.z": set(), "inproc.types": set()}
    assert package_cycles(clean) == []
    planted = {**clean, "inproc.b.z": {"inproc.a.w"}, "inproc.a.w": set()}
    assert package_cycles(planted) == [("inproc.a", "inproc.b")]
    three = {**clean, "inproc.types": {"inproc.a.w"}, "inproc.a.w": set()}
    assert package_cycles(three) == [("inproc.a", "inproc.b", "inproc.types")]


def test_no_package_cycle():
    cycles = package_cycles({name: GRAPH[name][0] for name in GRAPH})
    assert not cycles, f"package-level import cycles: {cycles}"


def test_engines_are_imported_only_by_their_adapters():
    outside = {n: GRAPH[n][1] & HEAVY for n, p in MODULES.items() if ENGINES_DIR not in p.parents}
    allowed = {"inproc.telemetry.gpu_reader": {"pynvml"}}  # the one NVML reader
    bad = {n: h for n, h in outside.items() if h - allowed.get(n, set())}
    assert not bad, f"heavy imports outside inproc/engines/: {bad}"


@pytest.mark.parametrize("layer", PURE_LAYERS)
def test_pure_layers_reach_no_engine_code(layer):
    for name in (n for n in MODULES if n.startswith(f"inproc.{layer}.") or n == f"inproc.{layer}"):
        reached = _reach(name) | {name}
        assert not {r for r in reached if r.startswith("inproc.engines")}, f"{name} reaches engine code"
        assert not set().union(*(GRAPH[r][1] for r in reached)) & HEAVY, f"{name} reaches a heavy package"


def _string_constants(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_nothing_outside_engines_names_an_engine_or_its_flags():
    names = set(engines.names())
    # Flag-shaped names only ("max-model-len"; a bare "model" is an ordinary word elsewhere).
    flags = {k for k in engines.model_args() | {k for a in engines.adapters().values() for k in a.max_len_args} if "-" in k}
    found = []
    for name, path in MODULES.items():
        if ENGINES_DIR in path.parents:
            continue
        for line, value in _string_constants(path):
            if value in names or value in flags:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {value!r}")
    assert not found, found


def test_modules_and_functions_are_small():
    long_modules = {n: c for n, p in MODULES.items() if (c := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    long_functions = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{name}.{node.name}: {length}")
    assert not long_modules and not long_functions, (long_modules, long_functions)
