"""Schema 7 on: a manifest and one cell file per entry (9: with a Parquet file per table beside it; 10: its row
shortened), written once; cached figures and when
they are derived again; schema-6 files migrated. Records come from the real vLLM run in
``tests/fixtures/cpu-vllm-small.json`` and its GPU-like derivative (no engine needed)."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from inproc import types as st
from inproc.errors import UsageError
from inproc.record.io import (SCHEMA_VERSION, ResultsWriter, cells_dir, load_results, read_finished, to_json,
                              write_results)
from inproc.record.cells import cell_name
from inproc.record.load import read_skeleton
from inproc.record.contain import CellFolder
from inproc.record.definitions import DEFINITIONS_VERSION
from inproc.record.tojson import HEADLINE, entry_id, entry_json
from tests.conftest import FIXTURES

SMALL, GPU = FIXTURES / "cpu-vllm-small.json", FIXTURES / "gpu-like.json"


def _same_array(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def _same_trace(a, b) -> None:
    assert set(a.steps.columns) == set(b.steps.columns)
    for name, col in a.steps.columns.items():
        assert col.dtype == b.steps.columns[name].dtype and _same_array(col, b.steps.columns[name]), name
    assert len(a.requests) == len(b.requests)
    for ra, rb in zip(a.requests, b.requests):
        for k in ("token_steps", "token_counts", "token_ids"):
            assert _same_array(getattr(ra, k), getattr(rb, k)), k
        assert (ra.request_id, ra.submit_s, ra.finished_step, ra.finish_reason, ra.num_cached_tokens) == \
            (rb.request_id, rb.submit_s, rb.finished_step, rb.finish_reason, rb.num_cached_tokens)
    assert (a.window_open_s, a.window_target_s, a.counters_start, a.counters_end, a.clock_origin_s) == \
        (b.window_open_s, b.window_target_s, b.counters_start, b.counters_end, b.clock_origin_s)


def _same_telemetry(a, b) -> None:
    assert (a is None) == (b is None)
    if a is None:
        return
    series = [(a.trace.host, b.trace.host)] + [(ga.series, gb.series) for ga, gb in zip(a.trace.gpus, b.trace.gpus)]
    for sa, sb in series:
        assert _same_array(sa.t_s, sb.t_s)
        for k, v in sa.values.items():
            assert v.dtype == sb.values[k].dtype and _same_array(v, sb.values[k]), k
    assert a.figures == b.figures and a.throttle_passed == b.throttle_passed


@pytest.mark.parametrize("path", [SMALL, GPU])
def test_manifest_and_cell_files_keep_every_raw_value_exactly(path, tmp_path):
    rec = load_results(path)
    out = tmp_path / "r.json"
    write_results(out, rec)
    manifest = json.loads(out.read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION == 10 and manifest["cells"] == "r.cells"
    assert "zb64" not in out.read_text()  # no array in the manifest
    rows = manifest["prefill"] + manifest["decode"]
    files = sorted(p.name for p in cells_dir(out).iterdir())
    assert sorted(d["cell_file"] for d in rows) == [f for f in files if f.endswith(".json.gz")]  # one each
    assert {f.split(".")[0] for f in files} == {d["cell_file"].split(".")[0] for d in rows}  # the rest beside them
    valid = next(d for d in manifest["decode"] if d["status"] == st.VALID)
    assert valid["total_tok_s"] > 0 and "telemetry" not in valid and "anatomy" not in valid  # the headline only
    again = load_results(out)
    for a, b in zip(rec.decode, again.decode):
        assert (a.key, a.verdict, a.figures) == (b.key, b.verdict, b.figures)
        assert (a.trace is None) == (b.trace is None)
        if a.trace is not None:
            _same_trace(a.trace, b.trace)
            _same_telemetry(a.telemetry, b.telemetry)
    for a, b in zip(rec.prefill, again.prefill):
        assert (a.verdict, a.figures) == (b.verdict, b.figures)
        for sa, sb in zip(a.samples, b.samples):
            _same_trace(sa, sb)
        _same_telemetry(a.telemetry, b.telemetry)


def test_a_cells_tables_are_parquet_files_pyarrow_reads_alone_with_a_column_per_field(tmp_path):
    import pyarrow.parquet as pq

    from inproc.measure.steps import FLOAT_COLUMNS, INT_COLUMNS, STEP_FLOATS, StepTrace, on_ns_grid_array

    rec = load_results(GPU)  # measured before times were put on the nanosecond grid: put them there
    old = next(e for e in rec.decode if e.trace is not None and e.telemetry is not None)
    cols = {**old.trace.steps.columns, **{n: on_ns_grid_array(old.trace.steps.columns[n]) for n in STEP_FLOATS}}
    e = dataclasses.replace(old, trace=dataclasses.replace(old.trace, steps=StepTrace(cols)))
    out = tmp_path / "r.json"
    write_results(out, dataclasses.replace(rec, decode=tuple(e if x is old else x for x in rec.decode)))
    stem = cells_dir(out) / f"decode-{e.key}"
    steps = pq.read_table(f"{stem}.steps.parquet")
    assert steps.num_rows == len(e.trace.steps)
    stored = {n.removesuffix("_ns").removesuffix("_s") for n in steps.column_names}
    written = {n.removesuffix("_s") for n in FLOAT_COLUMNS + INT_COLUMNS if e.trace.steps.known(n).any() or n == "output_of"}
    assert stored == written  # every field the engine reported, and only those
    assert steps.column("t_end_ns").to_numpy().tolist() == [round(t * 1e9) for t in e.trace.steps.t_end_s]
    tokens = pq.read_table(f"{stem}.tokens.parquet")
    assert tokens.column_names == ["request", "step", "id"]
    assert tokens.num_rows == sum(len(r.token_ids) for r in e.trace.requests)
    requests = pq.read_table(f"{stem}.requests.parquet")
    assert requests.column("request_id").to_pylist() == [r.request_id for r in e.trace.requests]
    gpus = pq.read_table(f"{stem}.gpu_samples.parquet")
    assert gpus.num_rows == sum(g.series.num_samples for g in e.telemetry.trace.gpus)
    assert gpus.schema.field("energy_mj").type == "uint64"  # a counter stays exact
    for name in ("steps", "tokens", "requests", "gpu_samples", "host_samples"):
        meta = pq.read_metadata(f"{stem}.{name}.parquet").metadata
        assert meta[b"inproc.schema_version"] == str(SCHEMA_VERSION).encode() and meta[b"inproc.table"] == name.encode()


def test_minus_zero_and_off_grid_times_read_back_exactly(tmp_path):
    """A seconds column holding -0.0, or a time off the nanosecond grid, stays float64 seconds."""
    from inproc.measure.steps import StepTrace
    from inproc.measure.trace import CellTrace, RequestTrace
    from inproc.record.cells import write_cell
    from inproc.record.load import read_cell
    from inproc.record.contain import CellFolder

    n = 5
    off = StepTrace.of(t_start_s=np.array([-0.0, 1e-9, 2e-9, 3e-9, 4e-9]), t_end_s=np.arange(n) * 1e-3 + 1e-12,
                       schedule_s=np.array([0.0, np.nan, 1.5e-6, 2e-6, 3e-6]))
    reqs = [RequestTrace("a", 4, 8, -0.0, True), RequestTrace("b", 4, 8, 0.25, False, np.array([1, 3], np.int32),
                                                               np.array([2, 1], np.int32), np.array([7, 8, 9], np.int32))]
    trace = CellTrace(off, reqs, None, 1.0)
    path = tmp_path / "x.json.gz"
    write_cell(path, "now", {}, [trace], False, None)
    back = CellTrace.from_dict(read_cell(CellFolder.at(tmp_path), path.name)["trace"])
    assert np.signbit(back.steps.t_start_s[0]) and back.steps.t_start_s[0] == 0.0
    assert np.array_equal(back.steps.t_end_s, off.t_end_s) and np.isnan(back.steps.schedule_s[1])
    assert np.array_equal(back.steps.schedule_s, off.schedule_s, equal_nan=True)
    assert np.signbit(back.requests[0].submit_s) and back.requests[1].submit_s == 0.25
    assert list(back.requests[1].token_steps) == [1, 3] and list(back.requests[1].token_counts) == [2, 1]
    import pyarrow.parquet as pq
    names = pq.read_table(tmp_path / "x.steps.parquet").column_names
    assert "t_start_s" in names and "t_end_s" in names and "schedule_ns" in names  # -0.0 and off-grid stay seconds


def test_cached_figures_are_read_unless_rederived_or_the_definitions_changed(tmp_path, run_inproc):
    rec = load_results(SMALL)
    e = next(e for e in rec.decode if e.status == st.VALID)
    true_rate = e.figures.total_tok_s
    cached = dataclasses.replace(e, figures=dataclasses.replace(e.figures, total_tok_s=1e9))  # stands for a cached figure
    out = tmp_path / "r.json"
    write_results(out, dataclasses.replace(rec, decode=tuple(cached if x is e else x for x in rec.decode)))

    def rate(**kw):
        return next(x for x in load_results(out, **kw).decode if x.key == e.key).figures.total_tok_s

    assert rate() == 1e9  # cached, as written
    assert rate(rederive=True) == pytest.approx(true_rate)  # inproc report --rederive
    manifest = json.loads(out.read_text())
    manifest["definitions_version"] = 1  # made by other definitions (an integer: before the version was a digest)
    out.write_text(json.dumps(manifest))
    assert rate() == pytest.approx(true_rate)
    manifest["definitions_version"] = DEFINITIONS_VERSION
    out.write_text(json.dumps(manifest))
    report = run_inproc("report", str(out), "--format", "csv", "--rederive", timeout=120)
    assert report.returncode == 0 and "1000000000" not in report.stdout and f"{true_rate:.1f}"[:3] in report.stdout


def test_the_writer_writes_each_cell_once_and_the_manifest_when_its_header_changes(tmp_path):
    rec = load_results(SMALL)
    out = tmp_path / "r.json"
    partial = dataclasses.replace(rec, prefill=(), decode=(), finished=False)
    writer = ResultsWriter(out, partial)
    stamps = {}
    for e in rec.decode:
        partial = dataclasses.replace(partial, decode=partial.decode + (e,))
        writer.save(partial)
        stamps.update({p.name: p.stat().st_mtime_ns for p in cells_dir(out).iterdir() if p.name not in stamps})
    assert {p.name: p.stat().st_mtime_ns for p in cells_dir(out).iterdir()} == stamps  # none rewritten
    cells = sum(p.stat().st_size for p in cells_dir(out).iterdir())
    # The header never changed: the manifest was written once, at the first save, before any cell file.
    assert writer.bytes_written == cells + out.stat().st_size
    assert len(json.loads(out.read_text())["decode"]) == 0
    assert [x.key for x in load_results(out).decode] == [x.key for x in rec.decode]  # the rest from the cell files
    resumed = load_results(out)
    assert not read_finished(out)
    again = ResultsWriter(out, resumed)
    again.save(dataclasses.replace(resumed, finished=True))
    assert again.bytes_written == out.stat().st_size  # a resumed run rewrites only the manifest
    assert read_finished(out)


def test_a_missing_cell_file_is_an_error_entry_and_finished_needs_only_the_manifest(tmp_path):
    out = tmp_path / "r.json"
    write_results(out, load_results(SMALL))
    victim = next(cells_dir(out).iterdir())
    victim.unlink()
    rec = load_results(out)
    assert [u.entry for u in rec.unreadable] == [victim.name.split(".", 1)[0]]
    assert sum(e.status == st.ERROR and f"{victim.name} unreadable: missing" in e.reason
               for e in rec.prefill + rec.decode) == 1
    with pytest.raises(UsageError, match=f"{victim.name}: missing") as e:
        load_results(out, rederive=True)
    assert "\n" not in str(e.value)
    assert read_finished(out) is load_results(SMALL).finished


def test_schema_6_files_are_migrated_and_derived_again(tmp_path):
    """Schema 6 held every raw record inline and no definitions version: it loads and is derived."""
    rec = load_results(GPU)
    old = to_json(rec)
    old["schema_version"] = 6
    del old["definitions_version"]
    cell = next(d for d in old["decode"] if d["status"] == st.VALID)
    true_rate, cell["total_tok_s"] = cell["total_tok_s"], 1e9  # stored figures were never trusted
    path = tmp_path / "six.json"
    path.write_text(json.dumps(old))
    six = load_results(path)
    assert six.schema_version == 6
    e = next(e for e in six.decode if (e.context, e.concurrency) == (cell["context"], cell["concurrency"]))
    assert e.figures.total_tok_s == pytest.approx(true_rate)
    assert [x.status for x in six.decode] == [x.status for x in rec.decode]
    resumed = ResultsWriter(path, six)  # resuming it writes today's layout: cell files and a manifest
    resumed.save(six)
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION and cells_dir(path).is_dir()
    assert [x.figures for x in load_results(path).decode] == [x.figures for x in six.decode]


def test_cell_files_of_an_earlier_run_at_the_path_are_not_taken(tmp_path):
    rec = load_results(SMALL)
    out = tmp_path / "r.json"
    write_results(out, dataclasses.replace(rec, created="earlier"))  # a run this path held before (--force)
    fresh = dataclasses.replace(rec, decode=rec.decode[:1], prefill=(), finished=False)
    ResultsWriter(out, dataclasses.replace(fresh, decode=())).save(fresh)
    again = load_results(out)
    assert [x.key for x in again.decode] == [rec.decode[0].key] and not again.prefill
    # The old folder went: only the new entry's cell file and its tables are there.
    assert {p.name.split(".", 1)[0] for p in cells_dir(out).iterdir()} == {f"decode-{rec.decode[0].key}"}


@pytest.mark.parametrize("crash_in", ["clear_cells", "write_cell"])
def test_a_new_run_that_crashes_at_its_first_save_never_reads_the_old_runs_cells(tmp_path, monkeypatch, crash_in):
    """The first save of a new file (``--force`` over an old one) replaces the manifest before the old
    cell folder goes and before any new cell: a crash anywhere leaves a file of one run."""
    from inproc.record import write as io

    rec = load_results(SMALL)
    out = tmp_path / "r.json"
    write_results(out, dataclasses.replace(rec, created="earlier"))

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(io, crash_in, crash)
    new = dataclasses.replace(rec, decode=rec.decode[:1], prefill=(), finished=False)
    writer = ResultsWriter(out, dataclasses.replace(new, decode=()))
    with pytest.raises(KeyboardInterrupt):
        writer.save(new)
    writer.close()
    left = load_results(out)
    assert left.created == rec.created and not left.finished and not left.decode and not left.unreadable


def test_cached_figures_come_back_as_the_typed_figures_they_were(tmp_path):
    # Every nested figure (anatomy, KV usage) is read back as its dataclass, not a dict.
    from inproc.measure.kv import KvUsage

    rec = load_results(SMALL)
    kv = KvUsage(peak_blocks=120, mean_blocks=97.5, pool_blocks=192, window_peak_blocks=None)
    decode = tuple(dataclasses.replace(e, figures=dataclasses.replace(e.figures, kv=kv)) if e.figures else e
                   for e in rec.decode)
    out = tmp_path / "r.json"
    write_results(out, dataclasses.replace(rec, decode=decode))
    back = load_results(out)
    measured = [(a, b) for a, b in zip(decode, back.decode) if a.figures is not None]
    assert measured
    for a, b in measured:
        assert isinstance(b.figures.kv, KvUsage) and b.figures == a.figures


def test_measured_times_are_whole_nanoseconds_stored_as_such_and_derive_the_same_figures(tmp_path):
    """A cell driven on a clock whose readings are not on any grid (a fake clock, an odd step time)."""
    from inproc.measure import metrics as m
    from inproc.measure.steps import STEP_FLOATS, STEP_INTS, on_ns_grid, on_ns_grid_array
    from inproc.measure.trace import CellTrace
    import pyarrow.parquet as pq

    from inproc.record.cells import write_cell
    from inproc.record.load import read_cell
    from inproc.record.contain import CellFolder
    from tests.run.test_decode_cell import run_cell
    from tests.fakes.fake_engine import FakeScript

    _, trace = run_cell(FakeScript(prefill_steps=3, step_s=0.0036123456789), window_s=0.2)
    steps = trace.steps
    for name in STEP_FLOATS[:2]:
        assert np.array_equal(on_ns_grid_array(steps.columns[name]), steps.columns[name]), name
    assert all(on_ns_grid(r.submit_s) == r.submit_s for r in trace.requests)
    opened = int(np.flatnonzero(steps.t_end_s == trace.window_open_s)[0])  # the window opens at a step's end, exactly
    assert opened > 0 and not np.array_equal(np.diff(steps.t_end_s), np.full(len(steps) - 1, 0.0036123456789))
    path = tmp_path / "cell.json.gz"
    write_cell(path, "now", {}, [trace], False, None)
    stored = pq.read_schema(tmp_path / "cell.steps.parquet")
    known = {name for name in STEP_FLOATS if steps.known(name).any()}
    counted_ns = {n for n in STEP_INTS if n.endswith("_ns")}  # recorded as integer ns already (the GC pauses)
    assert {n for n in stored.names if n.endswith("_ns")} - counted_ns == {f"{n[:-2]}_ns" for n in known}  # the times, as integer ns
    assert all(stored.field(f"{n[:-2]}_ns").type == "int64" for n in known)
    again = CellTrace.from_dict(read_cell(CellFolder.at(tmp_path), path.name)["trace"])
    _same_trace(trace, again)
    w, w2 = m.window(trace), m.window(again)
    assert (w.first_step, w.last_step) == (w2.first_step, w2.last_step) and w.length_s == w2.length_s
    assert m.total_tok_s(trace, w) == m.total_tok_s(again, w2) and m.ttft_ms_median(trace) == m.ttft_ms_median(again)
    assert m.harness_overhead(trace, w) == m.harness_overhead(again, w2)


@pytest.mark.parametrize("table, damage, what", [
    ("steps", lambda b: b[: len(b) // 2], "truncated table file"),
    ("tokens", lambda b: b[:4] + bytes(b[i] ^ 0xFF for i in range(4, len(b) // 2)) + b[len(b) // 2:], "damaged table file"),
    ("requests", lambda b: b"", "empty table file"),
    ("host_samples", None, "missing table file")])
def test_a_damaged_table_beside_a_cell_file_is_one_line_naming_it(tmp_path, table, damage, what):
    out = tmp_path / "r.json"
    write_results(out, load_results(SMALL))
    victim = cells_dir(out) / f"decode-256x1.{table}.parquet"
    if damage is None:
        victim.unlink()
    else:
        victim.write_bytes(damage(victim.read_bytes()))
    rec = load_results(out)  # that entry is an Error entry naming the table file; the rest loads
    lost = next(e for e in rec.decode if e.key == "256x1")
    assert lost.error.startswith(f"cell file r.cells/decode-256x1.json.gz unreadable: {victim}: {what}"), lost.error
    assert all(e.trace is not None for e in rec.decode if e.key != "256x1" and e.figures is not None)
    with pytest.raises(UsageError) as e:
        load_results(out, rederive=True)
    assert str(e.value).startswith(f"{victim}: {what}") and "\n" not in str(e.value), str(e.value)


def test_a_step_field_added_to_the_record_is_a_column_with_no_change_to_the_writer(tmp_path):
    """Per-step fields another version adds (here GC pauses: a count and seconds) become columns by their names."""
    import pyarrow.parquet as pq

    from inproc.measure.steps import StepTrace
    from inproc.measure.trace import CellTrace
    from inproc.record.cells import write_cell

    n = 4
    base = StepTrace.of(t_start_s=np.arange(n) * 1e-3, t_end_s=np.arange(n) * 1e-3 + 5e-4)
    cols = {**base.columns, "gc_collections": np.array([0, 1, 0, 2]), "gc_pause_s": np.array([0.0, 1.5e-4, 0.0, 3e-6])}
    write_cell(tmp_path / "c.json.gz", "now", {}, [CellTrace(StepTrace(cols), [], None, 1.0)], False, None)
    steps = pq.read_table(tmp_path / "c.steps.parquet")
    assert steps.column("gc_collections").to_pylist() == [0, 1, 0, 2]
    assert steps.column("gc_pause_ns").to_pylist() == [0, 150_000, 0, 3_000]


def _unlisted(path, tmp_path, name):
    """A copy of the results file at ``path`` as a killed run leaves it: every entry in its cell files alone."""
    import shutil
    out = tmp_path / f"{name}.json"
    manifest = json.loads(path.read_text())
    manifest.update(prefill=[], decode=[], finished=False, cells=f"{name}.cells")
    out.write_text(json.dumps(manifest))
    shutil.copytree(cells_dir(path), cells_dir(out))
    return out


def _headline(e):
    return (e.status, e.reason, e.verdict.checks_passed, e.figures, e.telemetry.figures if e.telemetry else None)


def test_a_cell_file_keeps_only_what_the_manifest_row_lacks_and_an_unlisted_entry_is_derived_again(tmp_path):
    """Schema 10: a measured entry's cell row has no status nor headline figures (the manifest holds them);
    an entry found in its cell file alone derives them again from its raw records, as loading with
    ``rederive`` does; an unmeasured entry (no raw record) keeps its whole row and verdict."""
    rec = load_results(SMALL)
    unmeasured = [e for e in rec.decode if e.trace is None]
    assert unmeasured and any(e.trace is not None for e in rec.decode)  # both kinds in the fixture
    out = tmp_path / "r.json"
    write_results(out, rec)
    for e in rec.prefill + rec.decode:
        row = read_skeleton(CellFolder.at(cells_dir(out)), cell_name(entry_id(e)))["entry"]
        whole = json.loads(json.dumps(entry_json(e)))  # as JSON holds it (tuples as lists)
        assert all(json.dumps(row[k]) == json.dumps(v) for k, v in whole.items() if k in row)
        if e in unmeasured:
            assert json.dumps(row) == json.dumps(whole)
        else:
            assert "status" not in row and "total_tok_s" not in row and "ttft_ms" not in row
            assert set(whole) - set(row) <= set(HEADLINE)
    recovered = load_results(_unlisted(out, tmp_path, "killed"))
    derived = load_results(out, rederive=True)
    assert [entry_id(e) for e in recovered.prefill + recovered.decode] == [entry_id(e) for e in rec.prefill + rec.decode]
    for a, b in zip(recovered.prefill + recovered.decode, derived.prefill + derived.decode):
        assert _headline(a) == _headline(b), entry_id(a)
    assert [e.status for e in recovered.decode] == [e.status for e in rec.decode]


def test_a_schema_9_cell_file_found_alone_loads_its_whole_row_as_written(tmp_path):
    v9 = FIXTURES / "schemas" / "v9.json"
    rec = load_results(v9)
    recovered = load_results(_unlisted(v9, tmp_path, "nine"))
    assert [_headline(e) for e in recovered.prefill + recovered.decode] == \
        [_headline(e) for e in rec.prefill + rec.decode]
