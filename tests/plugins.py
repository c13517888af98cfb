"""vLLM general plugins made by a test, seen only by the child processes it starts.

vLLM loads every entry point of the group ``vllm.general_plugins`` when it builds an engine
(``vllm.plugins.load_general_plugins``). A test plugin wraps the model runner's
``execute_model`` (the CPU runner inherits it from ``GPUModelRunner``), so what it plants
(a busy-wait, a sleep, a ``gc.collect()``) happens inside the engine's real ``step()``.
A plant judged against a rule relative to the machine's own steps is sized by :func:`step_sized`
from the steps just before it, so it stays as far past the rule on a slower machine.

Nothing is installed into the environment: :func:`register` writes the plugin's
``.dist-info`` (its entry point) into a folder of the test's own, and :func:`plugin_env`
puts that folder and the plugin's source folder on a child's ``PYTHONPATH``, where
``importlib.metadata`` finds it. No other test, and not the test process itself, sees it.
"""
from __future__ import annotations

from pathlib import Path

from tests.spawn import child_env

GROUP = "vllm.general_plugins"


def register(site: Path, module: str) -> Path:
    """The entry point ``module = module:register`` of group :data:`GROUP`, written as a
    distribution's metadata under ``site``; the ``.dist-info`` folder."""
    info = site / f"{module}-0.0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{module} = {module}:register\n")
    return info


def plugin_env(site: Path, source: Path, **extra: str) -> dict[str, str]:
    """A child's environment (:func:`tests.spawn.child_env`) that loads the plugins registered
    under ``site``, their modules imported from ``source``."""
    env = child_env(**extra)
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{site}:{source}"
    return env


def wrapping_module(before_call: str) -> str:
    """Source of a plugin module whose ``register()`` wraps ``GPUModelRunner.execute_model``.

    ``before_call`` is the body of ``_before(n)``, run inside the step before the model
    runner's forward, where ``n`` counts calls from 1 (``import time, gc`` are in scope).
    Registering twice (vLLM may load plugins more than once) wraps once."""
    body = "\n".join(f"    {line}" for line in before_call.strip().splitlines()) or "    pass"
    return f'''import gc
import time


def _before(n):
{body}


def register():
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    inner = GPUModelRunner.execute_model
    if getattr(inner, "_test_plugin", False):
        return
    calls = [0]

    def execute_model(self, *args, **kwargs):
        calls[0] += 1
        _before(calls[0])
        return inner(self, *args, **kwargs)

    execute_model._test_plugin = True
    GPUModelRunner.execute_model = execute_model
'''


def busy_wait(seconds: float) -> str:
    """A ``before_call`` body that spins for ``seconds`` on every call (CPU time, as a slower kernel costs)."""
    return f"end = time.perf_counter() + {seconds!r}\nwhile time.perf_counter() < end:\n    pass"


def step_sized(plant: str, clean_gaps: int = 16) -> str:
    """A ``before_call`` body that runs ``plant`` with ``step_s`` in scope: the median of the last ``clean_gaps``
    gaps from the end of one ``_before`` to the start of the next (one step as this machine runs it now: the
    forward, the rest of ``step()`` and the loop up to the next step), ``None`` until that many were timed.

    The clock restarts after ``plant``, so a planted wait never counts as a step; ``plant`` sizes itself as a
    multiple of ``step_s`` (a fixed wait would be judged against a slower or faster machine's own steps).
    A gap can be longer than the engine's step (an interval between cells, a prefill): the median ignores
    the few, and the rest only make ``step_s``, and the plant, larger.
    """
    return (f"import statistics\nglobal _gaps, _after\n"
            f"if n == 1:\n    _gaps, _after = [], None\n"
            f"if _after is not None:\n    _gaps.append(time.perf_counter() - _after)\n"
            f"step_s = statistics.median(_gaps[-{clean_gaps}:]) if len(_gaps) >= {clean_gaps} else None\n"
            f"{plant.strip()}\n"
            f"_after = time.perf_counter()")


def step_sized_gemm(steps: float, every: int = 1, dim: int = 192, clean_gaps: int = 8) -> str:
    """A ``before_call`` body that plants ``torch.mm`` of ``dim`` x ``dim`` inside the step: on every ``every``-th
    call once ``step_s`` is known (:func:`step_sized`), a fixed count of multiplies sized then to take about
    ``steps`` x ``step_s`` (one multiply timed as the median of five). Each planted call appends "COUNT NS" (the
    multiplies, their nanoseconds) to the file ``INPROC_TEST_PLANT_LOG`` names. Sized by the machine's own steps,
    the plant stays the same share of a step on a slower or busier machine, where the categories' noise grows."""
    return step_sized(f"""
import os, statistics, torch
global _gemm
if n == 1:
    _gemm = {{"a": torch.ones({dim}, {dim})}}
if step_s is not None and "reps" not in _gemm:
    one = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        torch.mm(_gemm["a"], _gemm["a"])
        one.append(time.perf_counter_ns() - t0)
    _gemm["reps"] = max(2, round({steps!r} * step_s * 1e9 / statistics.median(one)))
if "reps" in _gemm and n % {every} == 0:
    t0 = time.perf_counter_ns()
    for _ in range(_gemm["reps"]):
        torch.mm(_gemm["a"], _gemm["a"])
    with open(os.environ["INPROC_TEST_PLANT_LOG"], "a") as f:
        f.write(f"{{_gemm['reps']}} {{time.perf_counter_ns() - t0}}\\n")
""", clean_gaps)


def read_plant_log(path) -> tuple[list[int], list[int]]:
    """What :func:`step_sized_gemm` logged, call by call: (multiplies, their nanoseconds)."""
    rows = [tuple(map(int, line.split())) for line in Path(path).read_text().splitlines()]
    return [r[0] for r in rows], [r[1] for r in rows]
