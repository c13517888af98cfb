"""A results file for a notebook (``inproc.open``): the run's header, its cells' raw tables as Arrow
tables, and its figures as one table.

Each table is what the cell file stores (``docs/results-format.md``): read as it is from a
schema-9 file, built by the same code from the raw records of an older one. An Arrow table
becomes a DataFrame with ``.to_pandas()``, ``polars.from_arrow(t)``, or is queried by name in
DuckDB (``duckdb.sql("SELECT ... FROM t")``).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from inproc import types as st
from inproc.errors import UsageError
from inproc.kernels.table import KernelTable
from inproc.measure.trace import CellTrace, KernelPass
from inproc.record.contain import CellFolder, OutsideFolder
from inproc.record.damage import Damage, words
from inproc.record.document import manifest_rows
from inproc.record.files import check_version, read_arrow, read_files, read_json
from inproc.record.layout import RESULTS_HINT, cell_name, entry_name
from inproc.record.load import load_results, read_cell, read_skeleton
from inproc.record.migrate import SCHEMA_VERSION
from inproc.record.tables import arrow_table, stored_tables
from inproc.record.schema import EarlierTry
from inproc.record.tojson import FLAGS, HEADLINE, entry_json
from inproc.telemetry.trace import TelemetryTrace

#: The tables a cell may hold, in the order :meth:`Cell.tables` lists them.
TABLES = ("steps", "requests", "tokens", "gpu_samples", "host_samples", "arrivals", "kernels")


class _Tables:
    """The three tables every cell has, by name, for a cell and for a whole run (each class has its ``table``)."""

    @property
    def steps(self) -> pa.Table:
        return self.table("steps")

    @property
    def requests(self) -> pa.Table:
        return self.table("requests")

    @property
    def tokens(self) -> pa.Table:
        return self.table("tokens")


@dataclass(frozen=True)
class Cell(_Tables):
    """One entry of the run: its key, status and manifest row, and its raw tables (read when first asked)."""

    name: str  # "decode-256x4", "prefill-8192": the cell file's stem
    kind: str  # "decode" | "prefill"
    context: int
    concurrency: int | None  # None for a prefill entry
    status: str
    row: dict[str, Any]  # the entry's row in the manifest
    folder: CellFolder | None  # the run's cell folder (None: raw records inline, schema 6 and older)
    error: str | None = None  # set when its cell file lies outside the folder: an Error cell, never opened

    @property
    def disturbed(self) -> str:
        """The disturbance rule's cause as the manifest recorded it ("" when none, or a file written before it)."""
        return str(self.row.get("disturbed") or "")

    @property
    def try_number(self) -> int:
        """The try the cell's figures come from (1 unless ``--retry-disturbed`` measured it again)."""
        return int(self.row.get("try") or 1)

    @property
    def tries(self) -> tuple[EarlierTry, ...]:
        """The disturbed tries before the one its figures come from (empty: measured once)."""
        return tuple(EarlierTry.from_dict(t) for t in self.row.get("tries") or ())

    @property
    def source(self) -> Path | None:
        """Its cell file as the manifest names it (None: raw records inline)."""
        name = self._file
        return self.folder.path / name if name else None

    @property
    def _file(self) -> str | None:
        return self.row.get("cell_file") if self.folder is not None else None

    @functools.cached_property
    def tables(self) -> dict[str, pa.Table]:
        """Every table the cell holds (an unmeasured cell, or one whose cell file is outside its folder: none)."""
        name = self._file
        if self.error is not None:
            return {}
        if name and name.endswith(cell_name("")):
            tables = read_arrow(self.folder, name)
            if isinstance(tables, Damage):
                raise UsageError(words(tables))
            return {k: v for k, v in tables.items() if v.num_columns}
        return _built(self.folder, name, self.row)

    def table(self, name: str) -> pa.Table:
        """Table ``name`` (empty where the cell has none: an unmeasured cell, a run without GPUs)."""
        return self.tables.get(name, pa.table({}))

    def to_pandas(self, name: str = "steps"):
        """Table ``name`` as a pandas DataFrame (pandas must be installed)."""
        return self.table(name).to_pandas()

    @functools.cached_property
    def kernel_pass(self) -> KernelPass | None:
        """The kernel pass's steps, device and note (None: the cell had none, or its file predates it)."""
        name = self._file
        if self.error is not None or not name or not name.endswith(cell_name("")):
            return None
        traces = read_skeleton(self.folder, name).get("traces") or [{}]
        d = traces[0].get("kernel_pass")
        return KernelPass.from_dict(d) if d else None

    @functools.cached_property
    def kernels(self) -> KernelTable | None:
        """The kernel pass's table (step, name, category, calls, device_ns), or None where the cell has none."""
        t = self.tables.get("kernels")
        if t is None or self.kernel_pass is None:
            return None
        return KernelTable.from_columns(t.to_pydict(), self.kernel_pass.device)


def _built(folder: CellFolder | None, name: str | None, row: dict[str, Any]) -> dict[str, pa.Table]:
    """The tables of an older file's entry, built from its raw records as schema 9 stores them."""
    raw = read_cell(folder, name) if folder is not None and name else {
        "trace": row.get("trace"), "samples": row.get("raw"), "telemetry": (row.get("telemetry") or {}).get("trace")}
    samples = raw.get("samples") is not None
    traces = [CellTrace.from_dict(t) for t in (raw["samples"] if samples else [raw["trace"]] if raw.get("trace") else [])]
    telemetry = TelemetryTrace.from_dict(raw["telemetry"]) if raw.get("telemetry") else None
    stored, _ = stored_tables(traces, samples, telemetry)
    return {k: arrow_table(v) for k, v in stored.items() if v}


@dataclass(frozen=True)
class Run(_Tables):
    """A results file: ``header`` (the manifest without its rows), ``cells``, and ``figures``."""

    path: Path
    header: dict[str, Any]
    cells: tuple[Cell, ...]

    def cell(self, name: str) -> Cell:
        """The cell named ``name`` (``decode-256x4``, ``prefill-8192``), or a KeyError listing the names."""
        for c in self.cells:
            if c.name == name:
                return c
        raise KeyError(f"no cell {name!r} in {self.path}; cells: {', '.join(c.name for c in self.cells)}")

    @functools.cached_property
    def figures(self) -> pa.Table:
        """One row per entry: its kind, key, status, reason and headline figures, as the loader derives
        them (again from the raw records where the file's definitions are not today's), and its
        disturbance flag: ``disturbed`` (the cause, "" when none), ``try`` and ``tries`` (each earlier,
        disturbed try: ``try``, ``total_tok_s``, ``disturbed``); a prefill entry is measured once."""
        rec = load_results(self.path)
        rows = [{"kind": "prefill", **entry_json(e)} for e in rec.prefill] + \
               [{"kind": "decode", **entry_json(e)} for e in rec.decode]
        unflagged = {"disturbed": "", "try": 1, "tries": []}
        return pa.Table.from_pylist([{**{k: r.get(k) for k in ("kind",) + HEADLINE if k != "cell_file"},
                                      **{k: r.get(k, unflagged[k]) for k in FLAGS}} for r in rows])

    def table(self, name: str) -> pa.Table:
        """Table ``name`` of every cell, one after another, with ``cell``, ``context`` and ``concurrency``
        first (a column some cells lack is null there)."""
        parts = []
        for c in self.cells:
            t = c.table(name)
            if t.num_rows:
                keys = {"cell": pa.array([c.name] * t.num_rows, pa.string()),
                        "context": pa.array([c.context] * t.num_rows, pa.int64()),
                        "concurrency": pa.array([c.concurrency] * t.num_rows, pa.int64())}
                for i, (k, v) in enumerate(keys.items()):
                    t = t.add_column(i, k, v)
                parts.append(t)
        return pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})


def open_run(path: str | Path) -> Run:
    """Open a results file of any schema (``RESULTS.json``); a missing or foreign file is a one-line UsageError."""
    p = Path(path)
    data = read_json(p, "results file", f"No results file at {str(path)!r}. {RESULTS_HINT}")
    check_version(data, "schema_version", SCHEMA_VERSION, "results file", RESULTS_HINT, str(p))
    files = read_files(data, p.parent, listed=False, tables=False)  # the unlisted cell files' JSON alone
    data, folder = manifest_rows(files), files.folder  # tables are read when a cell's are asked for
    cells = tuple(_cell(kind, row, folder) for kind in ("prefill", "decode") for row in data.get(kind, []))
    header = {k: v for k, v in data.items() if k not in ("prefill", "decode")}
    return Run(p, header, cells)


def _cell(kind: str, row: dict[str, Any], folder: CellFolder | None) -> Cell:
    """A manifest row as a cell; one whose cell file lies outside the folder is an Error cell (as the loader's)."""
    concurrency = row.get("concurrency") if kind == "decode" else None
    name = entry_name(row["context"], concurrency)
    error = None
    if folder is not None and row.get("cell_file"):
        try:
            folder.file(row["cell_file"])
        except OutsideFolder as e:
            error = str(e)
    status = st.ERROR if error else row.get("status", "")
    return Cell(name, kind, int(row["context"]), concurrency, status, row, folder, error)
