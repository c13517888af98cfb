"""Reading, stage 2: the results file's versions, and each older version brought to the current one.

The one place where schemas meet: each version below has one step to the next
(:data:`STEPS`), applied in order by :func:`migrate` to the manifest. A cell file of an
older schema is brought to the same document by its reader of stage 2
(``inproc.record.document``): schema 7-8 ``.npz`` arrays joined into the raw records' tree
(``inproc.record.migrate_cells``), schema 9-10 Parquet tables turned back into it
(``inproc.record.fromtables``); a schema-9 cell row holds the whole row, a schema-10 one
what the manifest row lacks.

Schema history (``schema_version``):
  1 — 2026-11-29: first format. Top level: schema_version, tool, created, command,
      finished, notes, profile, plan, engine, capacity, machine, prefill[], decode[].
      Each entry carries its figures flat (the published matrices' column names) and its raw
      records under ``raw`` (prefill) or ``trace`` (decode); telemetry under
      ``extra.telemetry`` ({figures, throttle, trace}). Arrays as {dtype, b64}.
  2 — 2026-12-01: telemetry moves from ``extra.telemetry`` to ``telemetry`` on each
      entry and ``extra`` goes; arrays as {dtype, n, zb64} (zlib). Figures, checks and
      the throttle flag stay in the file for readers without inproc, but the loader
      derives them again from the raw records (``inproc.record.derive``).
  3 — 2026-12-01: step anatomy. Each step trace may hold the columns of
      ``inproc.measure.steps`` (batch shape, ``output_of``, CUDA-graph mode and padding,
      FLOPs and bytes, host times); ``engine.forward_source`` says where bytes and FLOPs
      come from; ``machine.cpu`` may hold the host copy bandwidth measured at run start;
      ``timing.measure_s`` is the wall time spent measuring. Older traces read the
      missing columns as unknown (and as synchronous steps).
  4 — 2026-12-01: ``plan.cells``: the decode cells as [context, concurrency] pairs when a
      run measured a cell list (``--cells``) rather than the contexts × concurrency grid;
      absent or null: the grid. Nothing moves.
  5 — 2026-12-01: ``plan.window_steps`` (a window of N steps; null: seconds); each decode
      trace may hold ``window_steps`` and ``profiled`` (the profiler, its files, the step
      rows it covered after the window). Nothing moves.
  6 — 2026-12-01: multi-node engines and sharded plans. ``placement``: where the ranks ran
      ({nodes, world_size, ranks per node, gpus_per_node, backend, rendezvous}; null: not
      recorded). ``shard``: the part of the plan an ``inproc run --shard I/N`` measured
      ({index, count, plan_id, prefill, cells}; null: all of it). ``merged_from``: the
      shards ``inproc merge`` made the file from ({index, count, path, created, command,
      measure_s, machine}; empty otherwise). Older files: null, null, []; nothing moves.

  7 — 2026-12-01: one cell file per entry, written once. The JSON becomes a manifest: each
      entry keeps its status, verdict and figures, and names its raw records' file
      (``cell_file``, under the folder named by top-level ``cells``, ``RESULTS.cells/``),
      an ``.npz`` holding the trace or samples and the telemetry samples
      (``inproc.record.cells``); ``trace``, ``raw`` and ``telemetry.trace`` leave the
      manifest. ``definitions_version``: the version of the definitions that derived the
      figures in the file; a loader takes them as written when it equals its own, and
      derives them again otherwise. It was an integer bumped by hand until 2026-12-02, and
      is since a digest of the defining code (16 hex digits, ``inproc.record.definitions``);
      an integer is never today's, so such a file is derived again. An entry without ``cell_file`` holds its raw records inline as in 6 (how
      a baseline holds its runs, and how a migrated file reads). ``engine.settings``
      becomes typed (``inproc.types.EngineSettings``): dtype, quantization, kv_cache_dtype,
      tensor_parallel_size, speculative_method, num_speculative_tokens, async_scheduling,
      event_loop, graph_capture_memory_bytes, and ``shown`` (the engine's other resolved
      arguments, by its own names). Older files: no ``definitions_version`` (derived again
      on load), raw records inline, the flat settings dict sorted into the typed fields
      (SGLang's tp_size, speculative_algorithm and speculative_num_draft_tokens renamed).
  8 — 2026-12-01: times on the clock's nanosecond grid. The step times (``t_start_s``,
      ``t_end_s`` and the host times of each step) and ``submit_s`` are rounded to whole
      nanoseconds when measured (``inproc.measure.steps.on_ns_grid``), and a cell file stores
      a float column whose values are all whole nanoseconds as integer nanoseconds (member
      ``ns8``: delta, zigzag, byte-shuffled; ``inproc.record.cells``). A reader of 7 cannot
      read that member, hence the version. Older files: nothing moves (their times read as
      written, in ``xor8``).
  9 — 2026-12-02: raw records as Parquet tables that pandas, polars and DuckDB read without
      inproc. An entry's cell file is ``ENTRY.json.gz`` (gzip JSON: created, the entry's row,
      the records' JSON values, its tables), with a Parquet file per table beside it:
      ``ENTRY.steps.parquet`` (one row per step, a column per field of the step record),
      ``ENTRY.requests``, ``ENTRY.tokens`` (one row per output token), ``ENTRY.gpu_samples``,
      ``ENTRY.host_samples`` (``inproc.record.cells``, ``docs/results-format.md``); times of
      whole nanoseconds as integer ``*_ns`` columns, others as written. A reader of 8 cannot
      read them, hence the version. Older files: nothing moves; their ``.npz`` cell files are
      read as they are (``inproc.record.migrate_cells``), and a resumed run writes its new
      entries as Parquet.
  10 — 2026-12-02: the cell file's ``entry`` keeps of a measured entry only what the manifest
      row does not hold (``inproc.record.tojson.cell_row``: no status, reason or headline
      figures, which the manifest has); an entry found in its cell file alone (a killed run's,
      not yet in the manifest) loads derived again from its raw records. A reader of 9 would
      find such an entry without a status, hence the version. The host CPU counters are now
      measured on the nanosecond grid, so their columns are stored as ``*_ns`` integers (the
      cell file's ``ns`` names them, as 9's did for step times). Older files: nothing moves; a
      schema-9 cell file holds the whole row.

  Added without a new version (2026-12-02; older readers ignore the fields):
  ``engine.settings.compute_dtype`` and ``compute_dtype_source``, the dtype the matmuls ran
  in as read from the kernels the engine chose (``inproc.engines.kernels``). A file without
  them loads with both null: ``inproc.measure.peaks.compute_dtype`` then takes an
  unquantized model's dtype and calls a quantized one's unknown.

  Added without a new version (2026-12-03; older readers ignore them): a decode cell's
  ``kernels`` table (``ENTRY.kernels.parquet``: step, name, category, calls, device_ns; the
  kernel pass, ``inproc.run.kernelpass``) and its trace's ``kernel_pass`` (first_step,
  last_step, device, note, files). A file without them loads with no kernel pass
  (``cell.kernels`` is None).

  Added without a new version (2026-12-06; older readers ignore them): a manifest row repeats the
  disturbance flag its cell file holds (``inproc.record.tojson.FLAGS``): a decode row ``disturbed``,
  ``try`` and ``tries``, a prefill row ``disturbed``. A manifest without them reads as "", 1 and no
  earlier try (``inproc.open``'s cells); the loader reads them from the cell file, as before.

A file newer than :data:`SCHEMA_VERSION` is refused by the loader (``inproc.record.files.check_version``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from inproc.types import EngineSettings

SCHEMA_VERSION = 10


def _v1(d: dict[str, Any]) -> None:
    for key in ("prefill", "decode"):
        d[key] = [_entry_v1_to_v2(e) for e in d.get(key, [])]


def _v5(d: dict[str, Any]) -> None:
    d.update(placement=None, shard=None, merged_from=[])  # not recorded before 6


def _v6(d: dict[str, Any]) -> None:
    d.pop("definitions_version", None)  # no cache before 7: derive every figure again
    engine = d.get("engine") or {}
    d["engine"] = {**engine, "settings": dataclasses.asdict(EngineSettings.from_flat(engine.get("settings") or {}))}
    # raw records stay inline, which 7 reads too


def _nothing(d: dict[str, Any]) -> None:
    """A version that only added optional fields or a cell-file format: nothing in the manifest moves."""


#: Version N -> the step that brings a manifest of version N to N + 1 (in place, on a copy).
STEPS: dict[int, Callable[[dict[str, Any]], None]] = {
    1: _v1, 2: _nothing, 3: _nothing, 4: _nothing, 5: _v5, 6: _v6,
    7: _nothing,  # ns8 members are new in cell files
    8: _nothing,  # Parquet cell files are new: .npz ones are read as they are
    9: _nothing,  # shorter cell rows are new: 9's hold the whole row
}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """A results JSON of any known version, brought to :data:`SCHEMA_VERSION` one step at a time (the input is left as it was)."""
    out = dict(data)
    while out["schema_version"] < SCHEMA_VERSION:
        STEPS[out["schema_version"]](out)
        out["schema_version"] += 1
    return out


def _entry_v1_to_v2(e: dict[str, Any]) -> dict[str, Any]:
    e = dict(e)
    extra = e.pop("extra", None) or {}
    e["telemetry"] = extra.get("telemetry") or None
    return e
