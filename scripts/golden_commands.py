"""Every report command in every format it writes, on saved fixtures: the golden files of ``tests/fixtures/golden/commands/``.

``scripts/update_golden.py`` writes them and ``tests/render/test_golden_commands.py`` sets each
command's output against its file byte for byte, so a change to how a report is built (its rows,
its writers, the command that picks them) that alters any format shows there. Each command runs
in this process through the CLI, from the repository root, as a user types it; the folders a
command needs built (a sweep, a synthetic graphs record) are made in a temporary folder whose
path is written ``<tmp>`` in the golden text.
"""
from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_COMMANDS = ROOT / "tests" / "fixtures" / "golden" / "commands"
FIX = "tests/fixtures"
H200 = f"{FIX}/h200"
HTML = "<html>"  # a command's --html page (or -o for the formats written only to a file) is the golden text
#: Golden file name -> the command's arguments; ``<tmp>`` is the temporary folder of built inputs, and an
#: argument ``<html>`` stands for a file whose text (instead of stdout) is the golden one.
COMMANDS: dict[str, tuple[str, ...]] = {
    "report__cpu-vllm-small.html": ("report", f"{FIX}/cpu-vllm-small.json", "--format", "html"),
    "report__gpu-like.html": ("report", f"{FIX}/gpu-like.json", "--format", "html"),
    "report__schemas-v10.html": ("report", f"{FIX}/schemas/v10.json", "--format", "html"),
    "report__compare-run-1.html": ("report", f"{FIX}/compare/run-1.json", "--format", "html"),
    "report__compare-run-1.md": ("report", f"{FIX}/compare/run-1.json"),
    "report__graphs-sizes.md": ("report", "<tmp>/gpu.json", "--sizes", "1,2,4,8,16,32"),
    "report__graphs-sizes.html": ("report", "<tmp>/gpu.json", "--sizes", "1,2,4,8,16,32", "--format", "html"),
    "report__sweep.md": ("report", "<tmp>/sweep"),
    "report__sweep.html": ("report", "<tmp>/sweep", "--format", "html"),
    "report__sweep.csv": ("report", "<tmp>/sweep", "--format", "csv"),
    "report__sweep-graphs.md": ("report", "<tmp>/graph-sweep"),
    "report__sweep-graphs.html": ("report", "<tmp>/graph-sweep", "--format", "html"),
    "report__sweep-graphs.csv": ("report", "<tmp>/graph-sweep", "--format", "csv"),
    **{f"compare__run-1__{new}.{fmt}": ("compare", f"{FIX}/compare/run-1.json", f"{FIX}/compare/{new}.json",
                                        "--format", fmt, "--allow-different", "profile.engine_args")
       for new in ("run-2", "hog", "seqs2") for fmt in ("text", "md", "json")},
    **{f"compare__run-1__{new}.html": ("compare", f"{FIX}/compare/run-1.json", f"{FIX}/compare/{new}.json",
                                       "--html", HTML) for new in ("run-2", "hog")},
    **{f"compare__engines.{fmt}": ("compare", f"{FIX}/compare/engines-vllm.json", f"{FIX}/compare/engines-sglang.json",
                                   "--format", fmt) for fmt in ("text", "md", "json")},
    "compare__engines.html": ("compare", f"{FIX}/compare/engines-vllm.json", f"{FIX}/compare/engines-sglang.json",
                              "--html", HTML),
    **{f"history.{fmt}": ("history", f"{FIX}/history", "--format", fmt) for fmt in ("text", "md")},
    "report__kernels.md": ("report", "<tmp>/planted.json"),
    "report__kernels.html": ("report", "<tmp>/planted.json", "--format", "html"),
    **{f"compare__kernels.{fmt}": ("compare", "<tmp>/baseline.json", "<tmp>/planted.json", "--format", fmt)
       for fmt in ("text", "md", "json")},
    "compare__kernels.html": ("compare", "<tmp>/baseline.json", "<tmp>/planted.json", "--html", HTML),
    "history.html": ("history", f"{FIX}/history", "--html", HTML),
    **{f"graphs.{fmt}": ("graphs", "<tmp>/gpu.json", "--sizes", "1,2,4,8,16,32", "--budget", "12", "--format", fmt)
       for fmt in ("text", "md", "json")},
    "graphs.html": ("graphs", "<tmp>/gpu.json", "--sizes", "1,2,4,8,16,32", "--budget", "12", "--format", "html",
                    "-o", HTML),
    **{f"kernels__one.{fmt}": ("kernels", f"{H200}/compiled_graph_async.json.gz", "--format", fmt)
       for fmt in ("text", "md", "json")},
    **{f"kernels__two.{fmt}": ("kernels", f"{H200}/graph_async.json.gz", f"{H200}/tf_llama.json.gz",
                               "--run-spread", "3%", "--format", fmt) for fmt in ("text", "md", "json")},
}


def _build_inputs(tmp: Path) -> None:
    """The inputs no fixture holds as a file: a GPU-sized graphs record, runs with kernel passes, two sweep folders."""
    _kernel_runs(tmp)
    import dataclasses

    from inproc import engines
    from inproc.record.io import load_results, write_results
    from inproc.sweep.graph_lists import graph_variants, parse_graph_sizes
    from inproc.sweep.manifest import DONE, FAILED, Sweep, SweepPlan, VariantRun, write_sweep
    from inproc.sweep.plan import parse_varies, plan_variants
    from tests.graphs import synthetic

    synthetic.gpu_like(tmp / "gpu.json")
    folder = tmp / "sweep"
    folder.mkdir()
    varies = parse_varies(("max-num-seqs=4,8,16",))
    variants = plan_variants(varies)
    rec = load_results(ROOT / FIX / "cpu-vllm-small.json")
    write_results(folder / variants[0].file, rec)
    settings = dataclasses.replace(rec.engine.settings, graph_capture_memory_bytes=3 * 2**30)
    write_results(folder / variants[1].file, dataclasses.replace(
        rec, engine=dataclasses.replace(rec.engine, settings=settings, build_s=12.5), decode=rec.decode[:2]))
    runs = (VariantRun(variants[0], DONE), VariantRun(variants[1], DONE),
            VariantRun(variants[2], FAILED, "vLLM rejected the arguments: max_num_seqs: bad"))
    plan = SweepPlan("p.toml", "p", "vllm", varies, False, ("--cells", "256x1"), 7)
    write_sweep(folder, Sweep(plan, runs, "inproc sweep ...", "2026-01-01"))
    folder = tmp / "graph-sweep"
    folder.mkdir()
    counts = {(256, 2): np.array([2, 2, 3, 4, 5] * 8), (256, 4): np.array([4, 7, 8, 8, 9] * 8)}
    lists = parse_graph_sizes("[2,4,8],[3,5,9]")
    variants = graph_variants(lists, engines.get("vllm").graph_size_sets, ())
    for v, g in zip(variants, lists):
        synthetic.write(folder / v.file, synthetic.record(counts, g.sizes, memory_bytes=2**30 * len(g.sizes)))
    plan = SweepPlan("p.toml", "p", "vllm", (), False, (), 1, {}, tuple((g.name, g.sizes) for g in lists))
    write_sweep(folder, Sweep(plan, tuple(VariantRun(v, DONE) for v in variants), "inproc sweep", "2026-01-01"))


def _kernel_runs(tmp: Path) -> None:
    """A baseline of three runs with simulated kernel passes, and a run whose gemm was made 3 ms slower."""
    from click.testing import CliRunner

    from inproc.cli.main import cli
    from inproc.record.io import write_results
    from tests.compare.test_kernels import RUNS, with_kernels
    from tests.sim.kernels import PassSettings

    rng = np.random.default_rng(21)
    clean = [tmp / f"clean-{i}.json" for i in range(3)]
    for path, rec in zip(clean, RUNS):
        write_results(path, with_kernels(rec, PassSettings(), rng))
    write_results(tmp / "planted.json", with_kernels(RUNS[0], PassSettings(plant="gemm", plant_ms=3.0), rng))
    done = CliRunner().invoke(cli, ["baseline", *map(str, clean), "-o", str(tmp / "baseline.json")])
    assert done.exit_code == 0, done.output


def _run(args: tuple[str, ...], tmp: Path) -> str:
    """One command's golden text: its stdout, or the file it wrote where an argument is ``<html>``."""
    from click.testing import CliRunner

    from inproc.cli.main import cli

    page = tmp / f"page-{time.monotonic_ns()}.out"
    argv = [str(page) if a == HTML else a.replace("<tmp>", str(tmp)) for a in args]
    done = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert done.exit_code in (0, 1), (args, done.output)  # 1: compare / history found a regression
    text = page.read_text() if HTML in args else done.stdout
    return text.replace(str(tmp), "<tmp>")


def command_reports() -> dict[str, str]:
    """Every command's golden file name -> its text, run from the repository root."""
    with tempfile.TemporaryDirectory() as d, contextlib.chdir(ROOT):
        tmp = Path(d)
        _build_inputs(tmp)
        return {name: _run(args, tmp) for name, args in COMMANDS.items()}

