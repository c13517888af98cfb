"""Run a small speed-test matrix on a GPU through transformers' continuous batching, and check it.

    PYTHONPATH=. python scripts/gpu/gpu_matrix_check.py [--out summary.json] [--duration 3] [--kernel-steps 6]

Needs a CUDA machine with torch, transformers (5.17–5.19), numpy, scipy, pyarrow, click, psutil
and nvidia-ml-py; no vLLM or SGLang. It runs ``inproc run launch_profiles/gpu-transformers-llama-h200.toml``
(contexts 512, 1K, 2K × concurrency 1, 4, 16, windows of --duration seconds, the kernel pass on) in a
child that records and refuses every import of vLLM or SGLang, then checks in the results file that

* the child ran to its end (exit 0) and never tried to import vLLM or SGLang;
* every decode cell has a status, every cell that is not Valid says why, and none is an Error;
* in every decode window, the tokens inproc streamed equal the tokens sampled, as inproc counts them
  on the batch's side (``FutureRequestState.has_new_token``): transformers keeps no token count of
  its own, so this is inproc's second count from the same request states, not the engine's;
* every cell's kernel pass ran on CUDA and filed its activities to its steps;
* every cell with output tokens has an energy per token, and it is > 0;
* the whole run took at most --budget-s seconds (150 by default, an H200's measure).

Prints one JSON object (the checks, each cell's figures) and exits 0 when every check passes, 1
when one fails, 2 when it cannot run here (no CUDA, or transformers missing). Takes about two
minutes on an H200.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
PROFILE = os.path.join(ROOT, "launch_profiles", "gpu-transformers-llama-h200.toml")

#: The child: an import of vLLM or SGLang, attempted anywhere, is recorded and refused; then inproc runs.
CHILD = """
import importlib.abc, sys
tried = []
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("vllm", "sglang"):
            tried.append(name)
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Refuse())
from inproc.cli.main import main
code = 0
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
print("ENGINE-IMPORTS " + ",".join(tried), flush=True)
from inproc.cli.main import end_process
end_process(code)
"""


def why_not_here(cpu: bool) -> str:
    """"" where the check can run, else the one line why not."""
    try:
        import torch
    except ImportError as e:
        return f"torch is not installed ({e})"
    if not cpu and not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device; this check runs the matrix on a GPU"
    try:
        import transformers  # noqa: F401
    except ImportError as e:
        return f"transformers is not installed ({e}); install transformers>=5.17,<5.20"
    return ""


def run_matrix(profile: str, out: str, args, timeout_s: float) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH", "")]))}
    cells = ["--cells", args.cells, "--no-prefill"] if args.cells else []
    cmd = [sys.executable, "-c", CHILD, "run", profile, *cells, "--duration", str(args.duration), "--kernels",
           "--kernel-steps", str(args.kernel_steps), "--out", out, "--force"]
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), \
            f"inproc run did not end within {timeout_s:.0f} s"
    return p.returncode, p.stdout, p.stderr


def cell_checks(entry) -> dict:
    """One decode cell: its status and reason, tokens against the engine's count, its kernel pass, energy."""
    from inproc import types as st
    from inproc.measure import metrics as m

    trace, figures = entry.trace, {}
    window = m.window(trace) if trace is not None else None
    counted = m.output_tokens(trace, window) if window is not None else None
    engine = None
    if trace is not None and trace.counters_start is not None and trace.counters_end is not None:
        engine = trace.counters_end.generation_tokens - trace.counters_start.generation_tokens
    k = trace.kernel_pass if trace is not None else None
    table = trace.kernels if trace is not None else None
    tel = entry.telemetry.figures if entry.telemetry is not None else None
    jpt = tel.joules_per_token if tel is not None else None
    status_ok = entry.status in st.STATUSES and entry.status != st.PENDING and (entry.status == st.VALID or
                                                                               bool(entry.reason))
    ran = entry.status in st.HEADLINE
    figures.update(cell=f"{entry.context}x{entry.concurrency}", status=entry.status, reason=entry.reason,
                   tokens_counted=counted, tokens_sampled=engine, joules_per_token=jpt,
                   kernel_device=k.device if k is not None else None, kernel_note=k.note if k is not None else None,
                   kernel_rows=len(table.name) if table is not None else 0)
    filed, unfiled = (k.filed, k.unfiled) if k is not None else (None, None)
    figures.update(filed=filed, unfiled=unfiled)
    kernels_ok = k is not None and k.note == "" and k.device == "cuda" and bool(filed) and unfiled == 0
    # A cell that did not run (Over capacity, Error) has no window to judge: null, neither pass nor fail.
    figures["checks"] = {
        "status and reason": status_ok,
        "no Error cell": entry.status != st.ERROR,
        "tokens counted = tokens sampled (inproc's own count)": (counted is not None and counted == engine) if ran else None,
        "kernel pass filed": kernels_ok if ran else None,
        "energy per token > 0": (jpt is not None and jpt > 0) if ran else None,
    }
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the summary JSON here")
    ap.add_argument("--duration", type=float, default=3.0, help="decode window per cell, seconds")
    ap.add_argument("--kernel-steps", type=int, default=6)
    ap.add_argument("--budget-s", type=float, default=150.0, help="the whole run's time limit checked")
    # For checking this script on a CPU: another profile and cells; the CUDA-only checks then fail, as they should.
    ap.add_argument("--profile", default=PROFILE, help=argparse.SUPPRESS)
    ap.add_argument("--cells", default="", help=argparse.SUPPRESS)
    ap.add_argument("--cpu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    why = why_not_here(args.cpu)
    if why:
        print(f"gpu_matrix_check: cannot run here: {why}.", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="inproc-gpu-matrix-") as tmp:
        results = os.path.join(tmp, "matrix.json")
        code, out, err = run_matrix(args.profile, results, args, timeout_s=max(args.budget_s * 3, 300))
        wall_s = time.perf_counter() - t0
        tried = next((ln.split(" ", 1)[1] if " " in ln else "" for ln in out.splitlines()
                      if ln.startswith("ENGINE-IMPORTS")), None)
        summary = {"profile": os.path.relpath(args.profile, ROOT), "exit": code, "wall_s": round(wall_s, 1),
                   "engine_imports_tried": tried, "cells": [], "checks": {},
                   "printed": [ln for ln in out.splitlines() if not ln.startswith("ENGINE-IMPORTS")][-80:]}
        if code == 0 and os.path.exists(results):
            from inproc.record.io import load_results

            rec = load_results(results)
            summary["engine"] = f"{rec.engine.name} {rec.engine.version}"
            summary["cells"] = [cell_checks(e) for e in rec.decode]
        else:
            summary["stderr_tail"] = err[-2000:]
    cells = summary["cells"]
    checks = summary["checks"]
    checks["inproc run exit 0"] = code == 0
    checks["no vLLM or SGLang import tried"] = tried == ""
    want = len(args.cells.split(",")) if args.cells else 9
    checks[f"{want} decode cells"] = len(cells) == want
    for name in ("status and reason", "no Error cell", "tokens counted = tokens sampled (inproc's own count)",
                 "kernel pass filed",
                 "energy per token > 0"):
        judged = [c["checks"][name] for c in cells if c["checks"][name] is not None]
        checks[name] = bool(judged) and all(judged)
    checks[f"within {args.budget_s:.0f} s"] = wall_s <= args.budget_s
    summary["passed"] = all(checks.values())
    text = json.dumps(summary, default=str)  # one line: scripts/gpu/gpu_check.py keeps a check's last JSON line
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
