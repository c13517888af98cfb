"""The results file: a version-1 file loads, renders and re-derives its figures; versions and writes are checked."""
from __future__ import annotations

import dataclasses
import json

import pytest

from inproc import types as st
from inproc.errors import UsageError
from inproc.measure import metrics as m
from inproc import codec
from inproc.record.io import SCHEMA_VERSION, load_results, migrate, write_results, write_text_atomic
from inproc.render.markdown import render_markdown
from tests.conftest import FIXTURES

V1 = FIXTURES / "cpu-vllm-small.json"  # written by the version before the typed record (schema 1)
V1_GPU = FIXTURES / "gpu-like.json"  # schema 1 too, with (fake) GPU telemetry and every status


def _raw(path):
    return json.loads(path.read_text())


def test_version_1_fixture_loads_and_derives_its_stored_figures():
    raw = _raw(V1)
    assert raw["schema_version"] == 1
    rec = load_results(V1)
    assert rec.schema_version == 1  # as written; the record itself is today's schema
    stored = {(d["context"], d["concurrency"]): d for d in raw["decode"]}
    measured = [e for e in rec.decode if e.trace is not None]
    assert len(measured) >= 4
    for e in measured:
        d = stored[(e.context, e.concurrency)]
        # Derived from the raw trace by today's definitions: the same numbers the old version stored.
        for name in ("total_tok_s", "per_request_tok_s", "ttft_ms", "tbt_ms", "avg_active", "output_tokens",
                     "completed", "window_s", "max_waiting", "harness_overhead"):
            assert getattr(e.figures, name) == pytest.approx(d[name]), name
        assert (e.status, e.reason, list(e.verdict.checks_passed)) == (d["status"], d["reason"], d["checks_passed"])
        assert e.figures.output_tokens == m.output_tokens(e.trace, m.window(e.trace))
    for p, d in zip(rec.prefill, raw["prefill"]):
        assert p.figures.ttft_ms == pytest.approx(d["ttft_ms"]) and p.status == d["status"]
    over = [e for e in rec.decode if e.status == st.OVER_CAPACITY]
    assert over and all(e.trace is None and e.capacity_check and not e.capacity_check.fits for e in over)


def test_loader_does_not_trust_stored_figures(tmp_path):
    raw = _raw(V1)
    cell = next(d for d in raw["decode"] if d["trace"])
    true_rate = cell["total_tok_s"]
    cell["total_tok_s"], cell["status"] = 1e9, st.ERROR  # a file edited, or written by a buggy version
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(raw))
    e = next(e for e in load_results(path).decode if e.key == f"{cell['context']}x{cell['concurrency']}")
    assert e.figures.total_tok_s == pytest.approx(true_rate) and e.status != st.ERROR


def test_telemetry_of_a_version_1_file_is_derived_again():
    rec = load_results(V1_GPU)
    throttled = next(e for e in rec.decode if e.key == "256x1")
    assert throttled.telemetry.throttle_passed is False and "hw_thermal_slowdown" in throttled.throttled
    assert throttled.telemetry.figures.energy_j > 0 and len(throttled.telemetry.figures.gpus) == 2
    looped = next(e for e in rec.decode if e.key == "256x4")
    assert looped.status == st.LOOPED and "period 2" in looped.reason  # the loop detector ran again
    assert next(e for e in rec.decode if e.key == "2048x1").status == st.ERROR


@pytest.mark.parametrize("path", [V1, V1_GPU])
def test_write_then_load_gives_the_same_record(path, tmp_path):
    rec = load_results(path)
    out = tmp_path / "v2.json"
    write_results(out, rec)
    raw = _raw(out)
    assert raw["schema_version"] == SCHEMA_VERSION and "extra" not in raw["decode"][0]
    again = load_results(out)
    assert again.schema_version == SCHEMA_VERSION
    assert render_markdown(again).replace("- Results file: schema version 1, figures derived again from its raw "
                                          "records by this inproc's definitions\n", "") \
        == render_markdown(rec).replace("- Results file: schema version 1, figures derived again from its raw "
                                        "records by this inproc's definitions\n", "")
    for a, b in zip(rec.decode, again.decode):
        assert a.figures == b.figures and a.verdict == b.verdict
        assert (a.telemetry is None) == (b.telemetry is None)
    assert dataclasses.asdict(rec.plan) == dataclasses.asdict(again.plan)
    assert rec.capacity == again.capacity


def test_migration_leaves_its_input_alone():
    raw = _raw(V1)
    before = json.dumps(raw, sort_keys=True)
    out = migrate(raw)
    assert out["schema_version"] == SCHEMA_VERSION and json.dumps(raw, sort_keys=True) == before


@pytest.mark.parametrize("content, needle", [
    ({"schema_version": SCHEMA_VERSION + 1}, f"newer than this inproc reads (up to {SCHEMA_VERSION}). Upgrade inproc"),
    ({"schema_version": "two"}, "is not an inproc schema"),
    ({"hello": 1}, "no schema_version"),
    ({"schema_version": SCHEMA_VERSION, "tool": {}}, "not a results file (KeyError"),
])
def test_bad_files_are_one_line_errors(content, needle, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    with pytest.raises(UsageError) as e:
        load_results(path)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_codec_is_exact_and_reads_version_1_arrays():
    import numpy as np

    for a in (np.array([2**64 - 1, 0, 7], dtype=np.uint64), np.linspace(0, 1, 1000), np.array([], dtype=np.int32)):
        back = codec.decode_array(codec.encode_array(a))
        assert back.dtype == a.dtype and np.array_equal(back, a)
    v1 = _raw(V1)["decode"][0]["trace"]["steps"]["t_end_s"]
    assert "b64" in v1 and codec.decode_array(v1).size > 0
    with pytest.raises(ValueError, match="header says"):
        codec.decode_array({**codec.encode_array(np.arange(3)), "n": 4})


def test_atomic_write_leaves_no_half_file(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    write_text_atomic(target, "old")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", fail)
    with pytest.raises(OSError):
        write_text_atomic(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_cell_list_run_keeps_its_cells_and_reports_only_those(tmp_path):
    """A run of a cell list (--cells) loads with the same cells; its matrix shows a dash off the list."""
    rec = load_results(V1)
    kept = [e for e in rec.decode if e.key in ("256x1", "2048x10")]
    settings = dataclasses.replace(rec.plan.settings, cells=((256, 1), (2048, 10)))
    narrowed = dataclasses.replace(rec, plan=dataclasses.replace(rec.plan, settings=settings), decode=tuple(kept))
    out = tmp_path / "cells.json"
    write_results(out, narrowed)
    assert _raw(out)["plan"]["cells"] == [[256, 1], [2048, 10]]
    again = load_results(out)
    assert again.settings.cells == ((256, 1), (2048, 10)) and again.settings.contexts == (256, 2048)
    text = render_markdown(again)
    assert "2 decode cells (256x1, 2Kx10)" in text
    decode = text.split("## Sustained decode")[1]
    row_256 = next(line for line in decode.splitlines() if line.startswith("| 256 |"))
    assert row_256.count("—") == 1 and "Pending" not in text  # 256x10 is off the list, not waiting to be run
