"""inproc's benchmarks: one module per benchmark, run by ``scripts/bench.py NAME``.

Each module has ``main(argv) -> int`` (its flags, ``--help`` its docstring) and states its target
once, as a constant of its own; what they share is in ``harness`` (a fresh child, the interleaved
order, the intervals, the verdict line) and ``blocks`` (interleaved blocks of steps inside one engine).
``formats``, ``kernelpass``, ``pairs`` and ``disturbed_real`` are parts of ``record``, ``anatomy``, ``verdict``
and ``disturbed`` (its ``--real``); ``fidelity_ab`` and ``fidelity_generate`` are parts of ``fidelity``.
"""
from __future__ import annotations

import ast
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: A benchmark's name on the command line -> its module in this package.
BENCHMARKS = {
    "fidelity": "fidelity", "overhead": "overhead", "anatomy": "anatomy", "slow": "slow", "compare": "compare",
    "history": "history", "record": "record", "speed": "speed", "verdict": "verdict", "bisect": "bisect",
    "loops": "loops", "otava": "otava", "kernels": "kernels", "disturbed": "disturbed", "exit": "exit",
    "telemetry": "telemetry", "spawn": "spawn", "fidelity-tf": "fidelity_tf", "spec": "spec",
    "breakeven": "breakeven",
}


def summary(name: str) -> str:
    """The first paragraph of a benchmark's docstring, read without importing it (an engine may be absent)."""
    doc = ast.get_docstring(ast.parse((HERE / f"{BENCHMARKS[name]}.py").read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    return first.split("``: ", 1)[1] if first.startswith("``scripts/bench.py") else first
