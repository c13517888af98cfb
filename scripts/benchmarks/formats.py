"""Two standard layouts for the same cell tables, and the outside-tools check (``bench.py record``).

  Parquet   what inproc writes (inproc.record.cells): one file per entry and table.
  npz       the alternative weighed against it: one self-describing ``.npz`` per entry,
            one named member per column (``steps/t_end_ns``), numpy alone reads it; a
            column with nulls is kept as float64 seconds (npz has no nulls).

Both are built from the same tables (``inproc.record.cells.stored_tables``). Save time:
from the typed records to every file on disk (fsync'd, atomic, as the runner writes);
load time: from the files to the raw records inproc derives from (Parquet), or to numpy
columns (npz: what a reader gets; no records are rebuilt from it, so its load time is a
lower bound). Sizes include each layout's own per-file overhead, not the manifest.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from inproc.record.atomic import write_atomic
from inproc.record.cells import cell_name, stored_tables, write_cell
from inproc.record.load import read_cell
from inproc.record.contain import CellFolder
from inproc.record.schema import PrefillEntry, RunRecord
from inproc.record.tojson import cell_row, entry_id


def _raw(e) -> tuple[list, bool, object]:
    telemetry = e.telemetry.trace if e.telemetry is not None else None
    if isinstance(e, PrefillEntry):
        return list(e.samples), True, telemetry
    return ([e.trace] if e.trace else []), False, telemetry


def _npz_write(path: Path, e, created: str) -> int:
    stored, meta = stored_tables(*_raw(e))
    arrays = {}
    for table, cols in stored.items():
        for name, col in cols.items():
            if isinstance(col, np.ma.MaskedArray):
                col = col.filled(0) / 1e9 if not col.mask.any() else np.where(col.mask, np.nan, col.data / 1e9)
            arrays[f"{table}/{name}"] = np.asarray(col if not isinstance(col, list) else [str(v) for v in col])
    cell = json.dumps({"created": created, "entry": cell_row(e), **meta}, separators=(",", ":"))
    arrays["cell.json"] = np.frombuffer(cell.encode(), np.uint8)
    return write_atomic(path, lambda f: np.savez_compressed(f, **arrays))


def _npz_read(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def compare_formats(rec: RunRecord, out: Path, tokens: int, label: str) -> None:
    """Print bytes per output token, save and load seconds of both layouts for ``rec``."""
    entries = rec.prefill + rec.decode
    results = {}
    for fmt in ("parquet", "npz"):
        folder = out / f"{label}-{fmt}"
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        if fmt == "parquet":
            paths = [folder / cell_name(entry_id(e)) for e in entries]
            for p, e in zip(paths, entries):
                write_cell(p, rec.created, cell_row(e), *_raw(e))
        else:
            paths = [folder / f"{entry_id(e)}.npz" for e in entries]
            for p, e in zip(paths, entries):
                _npz_write(p, e, rec.created)
        saved = time.perf_counter() - t0
        t0 = time.perf_counter()
        for p in paths:
            read_cell(CellFolder.at(folder), p.name) if fmt == "parquet" else _npz_read(p)
        loaded = time.perf_counter() - t0
        size = sum(f.stat().st_size for f in folder.iterdir())
        results[fmt] = (size, saved, loaded)
    for fmt, (size, saved, loaded) in results.items():
        print(f"  {label} as {fmt:8s}: {size / tokens:6.2f} bytes per output token ({size:,} bytes), "
              f"save {saved:.2f} s, load {loaded:.2f} s")


OUTSIDE = r"""
import glob, json, sys
import pyarrow.parquet as pq
out = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.steps.parquet")):
    t = pq.read_table(path)
    ns = t.column("t_end_ns").to_pylist() if "t_end_ns" in t.column_names else []
    out[path.rsplit("/", 1)[1].split(".")[0]] = [t.num_rows, ns]
print(json.dumps({"cells": out, "inproc_imported": any(m.split(".")[0] == "inproc" for m in sys.modules)}))
"""


def outside_tools(results: Path, cells: Path) -> None:
    """A cell's steps read by pyarrow alone in a child process (``python -I``: no inproc on its path)
    set against ``inproc.open``: the same step count and step end times per cell."""
    import inproc

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    child = subprocess.run([sys.executable, "-I", "-c", OUTSIDE, str(cells)], capture_output=True, text=True,
                           check=True, env=env, cwd="/")
    seen = json.loads(child.stdout)
    run = inproc.open(results)
    ours = {c.name: [c.steps.num_rows, c.steps.column("t_end_ns").to_pylist() if "t_end_ns" in c.steps.column_names
                     else []] for c in run.cells if c.steps.num_columns}  # an unmeasured cell has no steps file
    same = seen["cells"] == ours and not seen["inproc_imported"]
    steps = sum(n for n, _ in ours.values())
    print(f"outside tools: pyarrow alone read {len(seen['cells'])} cells, {steps:,} steps; step counts and "
          f"t_end_ns {'the same as' if same else 'DIFFER from'} inproc.open() (inproc imported in the child: "
          f"{seen['inproc_imported']})")
