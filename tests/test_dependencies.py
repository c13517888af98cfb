"""Every package inproc imports outside its engine adapters is declared in ``pyproject.toml``.

Read from the code itself: every ``import`` counts, also one inside a function (scipy for
the t quantiles and the spreads' prior in compare and history), so ``pip install inproc`` gives
a tool whose reading commands (report, compare, baseline, history) run. An import guarded by
``except ImportError`` (the module says what is missing and goes on) may come from an extra
instead (pynvml from ``nvml``). The engine adapters import their engine, which the engine's
extra brings.
"""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "inproc"
ENGINES_DIR = PACKAGE / "engines"
#: Import names whose distribution is named otherwise.
DISTRIBUTIONS = {"pynvml": "nvidia-ml-py", "yaml": "pyyaml", "zmq": "pyzmq"}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them: ``huggingface_hub`` and ``Huggingface-Hub`` alike."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _catches_import_error(node: ast.Try) -> bool:
    def names(t: ast.expr | None) -> set[str]:
        if t is None:
            return set()
        items = t.elts if isinstance(t, ast.Tuple) else [t]
        return {i.id for i in items if isinstance(i, ast.Name)}

    return any(names(h.type) & _IMPORT_ERRORS for h in node.handlers)


def third_party_imports(source: str) -> dict[str, bool]:
    """The top-level packages a module's text imports, anywhere in it (stdlib and inproc left out),
    each with whether every import of it is guarded by ``except ImportError``."""
    guarded_nodes: set[int] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and _catches_import_error(node):
            guarded_nodes.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    found: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops = [node.module.split(".")[0]]
        else:
            continue  # a relative import is inproc's own
        for top in tops:
            if top in sys.stdlib_module_names or top == "inproc":
                continue
            found[top] = found.get(top, True) and id(node) in guarded_nodes
    return found


def declared(pyproject: dict) -> tuple[set[str], set[str]]:
    """(the distributions ``dependencies`` requires, those only an optional extra brings), normalized."""
    def names(reqs: list[str]) -> set[str]:
        return {normalized(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r.strip()).group(0)) for r in reqs}

    project = pyproject["project"]
    required = names(project.get("dependencies", []))
    optional = set().union(*map(names, (project.get("optional-dependencies") or {}).values()))
    return required, optional - required


def undeclared(imports: dict[str, dict[str, bool]], required: set[str], optional: set[str]) -> list[str]:
    """``module: package`` for each import that ``pyproject`` does not declare (an unguarded one must be required)."""
    bad = []
    for module, packages in sorted(imports.items()):
        for top, guarded in sorted(packages.items()):
            dist = normalized(DISTRIBUTIONS.get(top, top))
            if dist not in required and not (guarded and dist in optional):
                where = "dependencies" if not guarded else "dependencies or an extra"
                bad.append(f"{module}: {top} (distribution {dist}) is not in {where}")
    return bad


def _package_imports() -> dict[str, dict[str, bool]]:
    return {str(p.relative_to(ROOT)): third_party_imports(p.read_text())
            for p in sorted(PACKAGE.rglob("*.py")) if ENGINES_DIR not in p.parents}


def test_every_import_outside_the_engines_is_declared():
    required, optional = declared(tomllib.loads((ROOT / "pyproject.toml").read_text()))
    imports = _package_imports()
    assert undeclared(imports, required, optional) == []
    # The lazy imports are seen (the reason this test exists): a function's import is a dependency.
    seen = set().union(*map(set, imports.values()))
    assert {"numpy", "click", "scipy", "pynvml"} <= seen


def test_the_check_finds_a_planted_import():
    required, optional = {"numpy"}, {"nvidia-ml-py", "extra-only"}
    planted = '''
import numpy as np
def lazy():
    from yaml import safe_load
try:
    import pynvml
except ImportError:
    pynvml = None
try:
    import extra_only.sub
except (OSError, ModuleNotFoundError):
    pass
import extra_only
'''
    found = third_party_imports(planted)
    assert found == {"numpy": False, "yaml": False, "pynvml": True, "extra_only": False}
    assert undeclared({"m.py": found}, required, optional) == [
        "m.py: extra_only (distribution extra-only) is not in dependencies",
        "m.py: yaml (distribution pyyaml) is not in dependencies"]
    guarded_only = third_party_imports("try:\n    import extra_only\nexcept ImportError:\n    pass\n")
    assert undeclared({"m.py": guarded_only}, required, optional) == []
    assert undeclared({"m.py": {"os_helper": True}}, required, optional) == [
        "m.py: os_helper (distribution os-helper) is not in dependencies or an extra"]


def test_declared_reads_requirements_and_extras():
    pyproject = {"project": {"dependencies": ["numpy>=1.24", "Click>=8.1"],
                             "optional-dependencies": {"nvml": ["nvidia-ml-py>=12"], "x": ["numpy", "ruptures==1.1.10"]}}}
    assert declared(pyproject) == ({"numpy", "click"}, {"nvidia-ml-py", "ruptures"})
