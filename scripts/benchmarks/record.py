"""The results file's own size and speed targets, printed, never asserted:

  bytes per output token   the record on disk (manifest + cell files) over every output
                           token its traces hold, on a run of the CPU default. Target <= 14.
                           Its bytes per step are printed beside it: the step rows cost per
                           step, the token ids per token, so a slower machine (fewer tokens
                           per step) reads more bytes per token from the same encoding.
                           A file given is saved again in today's format; times measured
                           before schema 8 are not on the nanosecond grid and stay float64.
  written / size           bytes written while saving the run, over the record's final
                           size: the run's saves replayed entry by entry through the
                           runner's own ResultsWriter (the save after each entry, then the
                           finished one). Target <= 2.
  report time              ``inproc report`` (md and html, a fresh process each, imports
                           included) of a synthetic 58-cell GPU-sized record: 8 contexts x 8
                           concurrency levels less 6, 1,000-8,300 steps and up to 128,000
                           output tokens per cell, 8 GPUs sampled at 10 Hz. Target < 2 s.
                           Its bytes per output token: target <= 6. Each cell carries a
                           kernel pass's table (16 steps x 64 CUDA kernel names of a
                           DeepSeek-like decode step, calls and lognormal device times):
                           with it, target <= 8; its bytes per cell are printed.
                           Wall and CPU seconds are printed: on a shared machine the wall
                           time includes waiting for a core.
                           Its traces are synthetic (numpy, seeded); its figures and verdicts
                           are derived from them by inproc's own definitions.

  formats                  the same tables as Parquet (what inproc writes) and as one
                           self-describing .npz per entry (scripts/benchmarks/formats.py): bytes
                           per output token, save and load seconds, on both records.
  outside tools            each cell's steps of the CPU-default record read by pyarrow alone
                           in a child process (no inproc on its path): the same step counts
                           and step end times as inproc.open().

For contrast each line also prints what the schema-6 layout (one JSON holding every raw
record, rewritten after each entry) takes for the same record. Timings on a shared machine
are indicative.

  .venv-vllm/bin/python scripts/bench.py record [RESULTS.json]   # without: runs the CPU default
"""
from __future__ import annotations

import dataclasses
import json
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml"
sys.path.insert(0, str(ROOT))

from scripts.benchmarks import formats as bench_formats  # noqa: E402

from inproc.measure.steps import StepTrace, on_ns_grid_array  # noqa: E402
from inproc.kernels.table import KernelTable  # noqa: E402
from inproc.measure.trace import CellTrace, KernelPass, RequestTrace  # noqa: E402
from inproc.plan.matrix import CellPlan  # noqa: E402
from inproc.record import derive  # noqa: E402
from inproc.record.io import ResultsWriter, cells_dir, load_results, to_json, write_results  # noqa: E402
from inproc.record.schema import RunRecord  # noqa: E402
from inproc.telemetry.series import SampleSeries  # noqa: E402
from inproc.telemetry.trace import HOST_COLUMNS, GpuTrace, TelemetryTrace  # noqa: E402
from tests.fixtures.make_gpu_like import GPU_NAME, gpu_series  # noqa: E402


def on_disk(path: Path) -> int:
    """The results file's bytes: its manifest and every file in its cell folder."""
    cells = cells_dir(path)
    return path.stat().st_size + (sum(f.stat().st_size for f in cells.iterdir()) if cells.is_dir() else 0)


def traces(rec: RunRecord) -> list[CellTrace]:
    """The record's traces: its decode cells' and its prefill samples."""
    return [e.trace for e in rec.decode if e.trace is not None] + [s for e in rec.prefill for s in e.samples]


def output_tokens(rec: RunRecord) -> int:
    """Every output token the record's traces hold (decode cells and prefill samples, in and out of windows)."""
    return sum(len(r.token_ids) for t in traces(rec) for r in t.requests)


def inline_size(rec: RunRecord) -> int:
    """What the schema-6 layout takes: the whole record, raw records inline, as one JSON."""
    return len(json.dumps(to_json(rec), separators=(",", ":")).encode())


def replay_saves(rec: RunRecord, out: Path) -> tuple[int, int]:
    """(bytes the runner's ResultsWriter writes over the run, bytes the schema-6 layout rewrote)."""
    empty = dataclasses.replace(rec, prefill=(), decode=(), finished=False)
    writer, old = ResultsWriter(out, empty), 0
    order = [("prefill", e) for e in rec.prefill] + [("decode", e) for e in rec.decode]
    partial = empty
    for kind, e in order:
        partial = dataclasses.replace(partial, **{kind: getattr(partial, kind) + (e,)})
        writer.save(partial)
        old += inline_size(partial)
    writer.save(rec)
    return writer.bytes_written, old + inline_size(rec)


def footer_bytes(cells: Path) -> tuple[int, int]:
    """(bytes of every Parquet footer in a cell folder, how many files): each file's metadata, its length
    and the closing magic number, read from the file's last 8 bytes (Parquet's layout)."""
    total, files = 0, 0
    for f in cells.glob("*.parquet"):
        with open(f, "rb") as fh:
            fh.seek(-8, os.SEEK_END)
            total += int.from_bytes(fh.read(4), "little") + 8
        files += 1
    return total, files


def kernels_bytes(cells: Path) -> tuple[int, int]:
    """(bytes of every kernels table in a cell folder, how many)."""
    files = list(cells.glob("*.kernels.parquet"))
    return sum(f.stat().st_size for f in files), len(files)


def run_cpu_default(out: Path) -> Path:
    path = out / "cpu-default.json"
    cmd = [sys.executable, "-m", "inproc", "run", str(PROFILE), "--kernels", "--out", str(path)]
    print(f"running the CPU default: {' '.join(cmd[1:])}", flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.DEVNULL)
    return path


def sizes(path: Path, out: Path) -> None:
    rec = load_results(path)
    tokens = output_tokens(rec)
    copy = out / "resaved.json"
    write_results(copy, rec)  # today's format, whatever the given file's
    size = on_disk(copy)
    print(f"record: {path} ({len(rec.prefill)} prefill entries, {len(rec.decode)} decode cells, {tokens:,} output tokens)")
    steps = sum(len(t.steps) for t in traces(rec))
    print(f"bytes per output token: {size / tokens:.2f}  ({size:,} bytes; target <= 14; "
          f"schema-6 layout {inline_size(rec) / tokens:.2f}); {size / steps:.1f} bytes per step "
          f"({steps:,} steps, {tokens / steps:.2f} tokens per step)")
    entries = len(rec.prefill) + len(rec.decode)
    kb, kn = kernels_bytes(cells_dir(copy))
    if kn:
        print(f"  of which kernels tables: {kb:,} bytes in {kn} cells ({kb / kn:,.0f} bytes per cell; "
              f"{(size - kb) / tokens:.2f} bytes per output token without them)")
    footers, files = footer_bytes(cells_dir(copy))
    print(f"  of which Parquet footers: {footers:,} bytes in {files} files ({footers / entries:,.0f} per entry, "
          f"{footers / tokens:.2f} per output token): a fixed cost per entry, so the same matrix on a slower or "
          f"busier machine (fewer tokens per entry) reads more bytes per output token")
    written, old = replay_saves(rec, out / "replayed.json")
    final = on_disk(out / "replayed.json")
    print(f"written while saving / record size: {written / final:.2f}  ({written:,} of {final:,} bytes; target <= 2; "
          f"schema-6 layout {old / inline_size(rec):.1f})")
    bench_formats.outside_tools(copy, cells_dir(copy))
    bench_formats.compare_formats(rec, out / "formats", tokens, "CPU default")


# -- a synthetic GPU-sized record ----------------------------------------------------
CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)
VOCAB, MAX_TOKENS, STEP_S, HZ, GPUS = 129_280, 1024, 0.0036, 10.0, 8


def synthetic_trace(rng: np.random.Generator, c: int, n_steps: int) -> CellTrace:
    """C requests kept in flight for ``n_steps`` async decode steps, each refilled after MAX_TOKENS tokens."""
    step_s = STEP_S * (1 + np.log2(c) / 4) * rng.normal(1.0, 0.02, n_steps)
    t_end = on_ns_grid_array(np.cumsum(step_s))  # as measured: on the clock's nanosecond grid
    t_start = on_ns_grid_array(t_end - step_s * 0.97)
    requests = []
    for slot in range(c):
        begin = 0
        while begin < n_steps:
            end = min(n_steps, begin + MAX_TOKENS)
            steps = np.arange(begin, end, dtype=np.int32)
            requests.append(RequestTrace(f"r{len(requests)}", 8192, MAX_TOKENS, float(t_start[begin]), begin == 0,
                                         steps, np.ones(steps.size, np.int32),
                                         rng.integers(0, VOCAB, steps.size).astype(np.int32),
                                         end - 1 if end - begin == MAX_TOKENS else None,
                                         "length" if end - begin == MAX_TOKENS else None, 0))
            begin = end
    flops = np.full(n_steps, 2.0e12 * c) * rng.normal(1.0, 0.001, n_steps)
    steps = StepTrace.of(t_start_s=t_start, t_end_s=t_end, schedule_s=on_ns_grid_array(rng.normal(1e-4, 1e-5, n_steps)),
                         update_s=on_ns_grid_array(rng.normal(5e-5, 5e-6, n_steps)), flops=flops, read_bytes=flops * 0.4,
                         write_bytes=flops * 0.01, num_running=np.full(n_steps, c), num_waiting=np.zeros(n_steps),
                         num_scheduled_tokens=np.full(n_steps, c), num_decode_reqs=np.full(n_steps, c),
                         num_decode_tokens=np.full(n_steps, c), output_of=np.arange(n_steps) - 1,
                         graph_mode=np.ones(n_steps), num_unpadded_tokens=np.full(n_steps, c),
                         num_padded_tokens=np.full(n_steps, 1 << int(np.ceil(np.log2(c)))))
    first = n_steps - PASS_STEPS  # the last rows stand for the kernel pass's steps
    return CellTrace(steps, requests, float(t_end[2]), float(t_end[first - 1] - t_end[2]), "all first tokens",
                     clock_origin_s=1000.0, kernel_pass=KernelPass(first, n_steps - 1, "cuda"),
                     kernels=synthetic_kernels(rng, first, c))


#: Kernel names of a synthetic DeepSeek-like decode step (64 per step, as a CUDA-graph replay launches
#: them: attention, MoE, dense GEMMs, all-reduce, norms, quantize, copies), with calls per step.
PASS_STEPS, LAYERS = 16, 61
# Real CUDA names are demangled templates, ~100-200 characters: each name carries one such tail.
_TAIL = "<cutlass::bfloat16_t, 128, 64, 8, true, false, cute::tuple<cute::C<1>, cute::C<2>>, SM90_TMA_LOAD>(Params)"
_NAMES = ([(f"flash_mla_decode_kernel_v{i}", LAYERS) for i in range(4)]
          + [(f"fused_moe_kernel_bf16_e{i}", LAYERS - 3) for i in range(12)]
          + [(f"nvjet_tst_{64 << (i % 3)}x{64 << (i % 2)}_64x4_1x2_h_bz_coopA_NNT_{i}", LAYERS) for i in range(16)]
          + [(f"ncclDevKernel_AllReduce_Sum_bf16_RING_LL_{i}", 2 * LAYERS) for i in range(4)]
          + [(f"vllm::rms_norm_kernel_{i}", 2 * LAYERS) for i in range(8)]
          + [(f"per_token_group_quant_8bit_kernel_{i}", LAYERS) for i in range(10)]
          + [(f"Memcpy DtoD (Device -> Device) {i}", 4) for i in range(6)]
          + [(f"triton_poi_fused_{i}", LAYERS) for i in range(4)])
KERNELS = tuple((f"void {name}{_TAIL}", calls) for name, calls in _NAMES)


def synthetic_kernels(rng: np.random.Generator, first: int, c: int) -> KernelTable:
    """A kernel pass's table over rows ``first..first + PASS_STEPS - 1``: every name each step, lognormal times."""
    rows = {}
    for s in range(first, first + PASS_STEPS):
        for name, calls in KERNELS:
            rows[(s, name)] = (calls, int(calls * 2_000 * (1 + np.log2(c)) * rng.lognormal(0.0, 0.1)))
    return KernelTable.of_rows(rows, "cuda")


def synthetic_telemetry(rng: np.random.Generator, trace: CellTrace) -> TelemetryTrace:
    start, stop = trace.clock_origin_s, trace.clock_origin_s + float(trace.steps.t_end_s[-1])
    t = np.arange(start, stop + 1 / HZ, 1 / HZ)
    host = SampleSeries(t, {name: np.cumsum(rng.normal(1.0, 0.1, t.size)) for name, _ in HOST_COLUMNS},
                        {name: np.ones(t.size, bool) for name, _ in HOST_COLUMNS}, {}, {})
    gpus = tuple(GpuTrace(i, GPU_NAME, f"GPU-synthetic-{i}", 1980.0, "instant", gpu_series(t, i, False))
                 for i in range(GPUS))
    return TelemetryTrace(HZ, start, stop, 0.1, 0, gpus, None, host, None)


def gpu_sized(template: RunRecord, cells: int = 58, seed: int = 1) -> RunRecord:
    """A record with ``cells`` measured decode cells of GPU size (see the module docstring)."""
    rng = np.random.default_rng(seed)
    grid = [(L, C) for L in CONTEXTS for C in CONCURRENCY][:cells]
    decode = []
    for L, C in grid:
        trace = synthetic_trace(rng, C, max(1000, min(8300, 128_000 // C)))
        cell = CellPlan(L, C, MAX_TOKENS, None)
        decode.append(derive.decode_entry(cell, "shared", "", trace, synthetic_telemetry(rng, trace), template.capacity,
                                          template.plan.loops))
    settings = dataclasses.replace(template.settings, contexts=CONTEXTS, concurrency=CONCURRENCY, prefill_contexts=(),
                                   cells=tuple(grid))
    return dataclasses.replace(template, plan=dataclasses.replace(template.plan, settings=settings), prefill=(),
                               decode=tuple(decode), finished=True)


def report_time(template: RunRecord, out: Path) -> None:
    rec = gpu_sized(template)
    path = out / "gpu-sized.json"
    write_results(path, rec)
    tokens, steps = output_tokens(rec), sum(len(e.trace.steps) for e in rec.decode)
    kb, kn = kernels_bytes(cells_dir(path))
    print(f"synthetic GPU-sized record: {len(rec.decode)} cells, {steps:,} steps, {tokens:,} output tokens, "
          f"{on_disk(path) / 1e6:.1f} MB: {on_disk(path) / tokens:.2f} bytes per output token with kernels tables "
          f"(target <= 8), {(on_disk(path) - kb) / tokens:.2f} without them (target <= 6; "
          f"schema-6 layout {inline_size(rec) / 1e6:.1f} MB)")
    print(f"  kernels tables: {kb / kn:,.0f} bytes per cell ({PASS_STEPS} steps x {len(KERNELS)} names; {kn} cells)")
    bench_formats.compare_formats(rec, out / "formats", tokens, "GPU-sized")
    for fmt in ("md", "html"):
        cmd = [sys.executable, "-m", "inproc", "report", str(path), "--format", fmt, "-o", str(out / f"report.{fmt}")]
        times = [_timed(cmd + list(flags)) for flags in ((), ("--rederive",))]
        print(f"inproc report --format {fmt}: {times[0][0]:.2f} s wall, {times[0][1]:.2f} s CPU  (target < 2 s; "
              f"with --rederive {times[1][0]:.2f} s wall, {times[1][1]:.2f} s CPU)")


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one child process. On a shared machine the
    wall time includes waiting for a core; the CPU time is what the report itself took."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - t0, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str]) -> int:
    """``bench.py record [RESULTS.json]``: a saved CPU-default run, or a new one made here."""
    ap = argparse.ArgumentParser(prog="bench.py record", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path, help="a saved CPU-default results file (default: make one here)")
    files = ap.parse_args(argv).files
    with tempfile.TemporaryDirectory(prefix="bench-record-") as tmp:
        out = Path(tmp)
        path = files[0] if files else run_cpu_default(out)
        sizes(path, out)
        report_time(load_results(path), out)
    return 0

