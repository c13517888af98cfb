"""``inproc kernels``: the per-step breakdown of saved profiler traces (the H200's recordings), their comparison,
the stored table, and one line with exit 2 for what is no trace or has no step mark."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from inproc.cli.main import main
from inproc.kernels.table import COLUMNS
from tests.cli.test_cli import inproc
from tests.conftest import FIXTURES

H200 = FIXTURES / "h200"


def run(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["kernels", *map(str, args)])
    got = capsys.readouterr()
    return e.value.code, got.out, got.err


def test_text_gives_each_traces_categories_and_its_filing(capsys):
    code, out, _ = run(capsys, H200 / "graph_async.json.gz", H200 / "tf_llama.json.gz")
    assert code == 0
    assert "232 device activities filed (58 per step); none unfiled" in out
    assert "748 device activities filed (187 per step); none unfiled" in out
    assert "tf_llama.json.gz against graph_async.json.gz: within-run only, no category named" in out


def test_json_holds_the_per_step_counts_and_two_traces_compared_with_a_stated_spread_name_the_mover(capsys):
    code, out, _ = run(capsys, H200 / "graph_async.json.gz", H200 / "tf_llama.json.gz", "--format", "json",
                       "--run-spread", "3%")
    doc = json.loads(out)
    assert code == 0 and [t["activities_per_step"] for t in doc["traces"]] == [[58] * 4, [187] * 4]
    assert all(t["unfiled"] == 0 for t in doc["traces"])
    assert doc["change"]["judged"] and "elementwise" in doc["change"]["named"]  # 0.04 → 3.8 ms per step


def test_markdown_shows_the_report_table_and_the_filing(capsys):
    code, out, _ = run(capsys, H200 / "compiled_graph_async.json.gz", "--format", "md")
    assert code == 0 and "| Trace | attention | gemm |" in out
    assert "- compiled_graph_async.json.gz: 4 steps marked 'inproc step'; 216 device activities filed (54 per step)" in out


def test_parquet_writes_the_table_a_cell_holds(capsys, tmp_path):
    out = tmp_path / "k.parquet"
    code, _, err = run(capsys, H200 / "eager_sync.json.gz", "--format", "parquet", "-o", out)
    t = pq.read_table(out)
    assert code == 0 and tuple(t.column_names) == COLUMNS and sum(t.column("calls").to_pylist()) == 4 * 59
    assert sorted(set(t.column("step").to_pylist())) == [0, 1, 2, 3]


@pytest.mark.parametrize("args, says", [
    (("README.md",), "README.md: not a torch profiler trace"),
    ((str(H200 / "graph_async.json.gz"), "--mark", "ProfilerStep#*"), "no host range named 'ProfilerStep#*'"),
    ((str(H200 / "graph_async.json.gz"), "--format", "parquet"), "--format parquet writes one trace's table"),
    ((str(H200 / "graph_async.json.gz"), "--run-spread", "lots"), "Bad --run-spread 'lots'"),
])
def test_bad_input_is_one_line_exit_2_and_no_file(capsys, tmp_path, args, says):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err
    assert not list(tmp_path.iterdir())


@pytest.mark.engine
@pytest.mark.engine_free  # starts `python -m inproc`, which builds no engine
def test_the_command_runs_as_a_process_and_refuses_a_non_trace_in_one_line():
    p = inproc("kernels", str(FIXTURES / "h200" / "gpu_check.json"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "no traceEvents" in p.stderr
