"""The checks ``scripts/gpu/gpu_check.py`` runs: each a child script with its own limit, or a look-up.

A child check passes when its script exits 0; its last JSON line (where it prints one) and
the tail of its output are kept, so the file says what was measured, not only the verdict.
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts" / "gpu"
TAIL_LINES = 40
RESERVE_S = 15.0  # kept back from every child's limit for writing the file
NSYS_STEPS = 3  # the steps scripts/gpu/gpu_profiler_check.py brackets with cudaProfilerStart / Stop


@dataclass(frozen=True)
class Check:
    """One check's verdict (None: not run here, and why), what it measured, and its wall time."""

    name: str
    passed: bool | None
    detail: str
    seconds: float
    data: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON form."""
        return {"name": self.name, "passed": self.passed, "detail": self.detail,
                "seconds": round(self.seconds, 1), "data": self.data}


@dataclass(frozen=True)
class Deadline:
    """The monotonic time by which every check must have finished."""

    at_s: float

    def limit(self, own_s: float) -> float:
        """A child's limit: its own, cut to what is left of the budget less :data:`RESERVE_S`."""
        return min(own_s, self.at_s - time.monotonic() - RESERVE_S)


def child_env() -> dict[str, str]:
    """This environment with the checkout first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def run(cmd: list[str], limit_s: float) -> tuple[int | None, str, float]:
    """(exit status or None on timeout, stdout + stderr, seconds) of ``cmd`` run in the checkout."""
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=limit_s)
        return p.returncode, p.stdout + p.stderr, time.monotonic() - t
    except subprocess.TimeoutExpired as exc:
        text = "".join(x.decode(errors="replace") if isinstance(x, bytes) else x for x in (exc.stdout, exc.stderr) if x)
        return None, text, time.monotonic() - t


def last_json(output: str) -> dict | None:
    """The last line of ``output`` that is a JSON object, parsed."""
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def script_check(name: str, script: str, args: list[str], own_limit_s: float, deadline: Deadline) -> Check:
    """Run ``scripts/gpu/SCRIPT ARGS``; it passes when it exits 0 within its limit."""
    limit = deadline.limit(own_limit_s)
    if limit <= 0:
        return Check(name, False, "not run: the 8-minute budget was spent", 0.0)
    rc, out, secs = run([sys.executable, str(SCRIPTS / script), *args], limit)
    lines = out.strip().splitlines()
    data = {"exit": rc, "result": last_json(out), "output_tail": lines[-TAIL_LINES:]}
    if rc is None:
        return Check(name, False, f"timed out after {limit:.0f} s", secs, data)
    return Check(name, rc == 0, f"exit {rc}: {lines[-1][:300] if lines else '(no output)'}", secs, data)


def peak_table_check() -> Check:
    """The peak table has an entry for the device's exact NVML name (else no % of peak is shown)."""
    import pynvml

    from inproc.measure.peaks import DEVICE_PEAKS

    t = time.monotonic()
    pynvml.nvmlInit()
    try:
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
    finally:
        pynvml.nvmlShutdown()
    name = (name.decode() if isinstance(name, bytes) else str(name)).strip()
    spec = DEVICE_PEAKS.get(name)
    data = {"nvml_name": name, "entry": None if spec is None else
            {"dense_tflops": dict(spec.dense_tflops), "bandwidth_tb_s": spec.bandwidth_tb_s, "source": spec.source}}
    detail = f"{name!r}: " + (f"{dict(spec.dense_tflops)} TFLOP/s, {spec.bandwidth_tb_s} TB/s" if spec else
                              f"no entry; the table has {sorted(DEVICE_PEAKS)}")
    return Check("peak_table", spec is not None, detail, time.monotonic() - t, data)


def nvtx_step_ranges(csv_text: str) -> int:
    """Instances of the step ranges (names holding ``step=``) in ``nsys stats --report nvtx_sum`` CSV."""
    lines = csv_text.splitlines()
    header = next((i for i, line in enumerate(lines) if "Instances" in line), None)  # nsys prints progress lines first
    if header is None:
        return 0
    rows = csv.DictReader(io.StringIO("\n".join(lines[header:])))
    return sum(int(float(r.get("Instances") or 0)) for r in rows if "step=" in (r.get("Range") or r.get("Name") or ""))


def nsys_check(deadline: Deadline) -> Check:
    """``gpu_profiler_check.py`` under nsys with the cudaProfilerApi capture range: exactly 3 steps' ranges."""
    nsys = shutil.which("nsys")
    if nsys is None:
        return Check("nsys", None, "not run: nsys is not on PATH", 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        rep = Path(tmp) / "check"
        limit = deadline.limit(120)
        if limit <= 0:
            return Check("nsys", False, "not run: the 8-minute budget was spent", 0.0)
        rc, out, secs = run([nsys, "profile", "--capture-range=cudaProfilerApi", "--trace=cuda,nvtx", "-o", str(rep),
                             sys.executable, str(SCRIPTS / "gpu_profiler_check.py")], limit)
        data: dict = {"profile_exit": rc, "profile_tail": out.strip().splitlines()[-TAIL_LINES:]}
        if rc != 0:
            return Check("nsys", False, f"nsys profile exit {rc}", secs, data)
        rc, stats, more = run([nsys, "stats", "--report", "nvtx_sum", "--format", "csv", f"{rep}.nsys-rep"],
                              deadline.limit(60))
        data.update(stats_exit=rc, nvtx_sum=stats.strip().splitlines()[-TAIL_LINES:])
        n = nvtx_step_ranges(stats) if rc == 0 else -1
        data["step_ranges"] = n
        return Check("nsys", n == NSYS_STEPS, f"{n} step range(s) in the capture (expect {NSYS_STEPS})",
                     secs + more, data)


def kernels_check(deadline: Deadline) -> Check:
    """The kernel pass (``scripts/gpu/gpu_kernel_check.py``): each part's kernels in its expected category."""
    check = script_check("kernels", "gpu_kernel_check.py", [], 240, deadline)
    result = check.data.get("result") or {}
    parts = result.get("parts") or []
    if not parts:
        return check
    verdicts = "; ".join(f"{p['part']} {'ok' if p['passed'] else 'n/a' if p['passed'] is None else 'FAIL'}"
                         f" ({p['share']:.0%} {p['expected']})" if p.get("share") is not None else
                         f"{p['part']} {'n/a' if p['passed'] is None else 'FAIL'} ({p['detail'][:80]})" for p in parts)
    unmatched = result.get("unmatched") or []
    detail = f"{verdicts}; {len(unmatched)} unmatched name(s)" + (f": {unmatched[:5]}" if unmatched else "")
    return Check("kernels", check.passed, detail, check.seconds, check.data)
