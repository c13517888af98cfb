"""``inproc kernels``: the per-step breakdown of saved profiler traces (the H200's recordings), their comparison,
the stored table, and one line with exit 2 for what is no trace or has no step mark."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from inproc.cli.main import main
from inproc.kernels.table import COLUMNS
from tests.cli.test_cli import inproc
from tests.conftest import FIXTURES, ROOT

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


GRAPH, LLAMA = str(H200 / "graph_async.json.gz"), str(H200 / "tf_llama.json.gz")


@pytest.mark.parametrize("args, says", [
    ((str(ROOT / "README.md"), "-o", "k.txt"), "README.md: not a torch profiler trace"),
    ((GRAPH, "--mark", "ProfilerStep#*", "--format", "md", "-o", "k.md"), "no host range named 'ProfilerStep#*'"),
    ((GRAPH, LLAMA, "--format", "parquet", "-o", "k.parquet"), "--format parquet writes one trace's table"),
    ((GRAPH, "--format", "parquet"), "--format parquet writes one trace's table"),
    ((GRAPH, LLAMA, "--format", "json", "--run-spread", "lots", "-o", "k.json"), "Bad --run-spread 'lots'"),
    ((GRAPH, str(H200 / "nowhere.json.gz"), "-o", "k.txt"), "nowhere.json.gz: no such file"),
])
def test_bad_input_is_one_line_exit_2_and_no_file(capsys, tmp_path, monkeypatch, args, says):
    """Run in ``tmp_path``, with ``-o`` naming a file there (a relative path, as a user types it): the folder a
    write would land in. Wrong code this fails: the output opened or written before the input is judged (the
    first trace's table or text written, then the second trace or the spread refused), or a parquet with no
    ``-o`` written under a default name."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err, err
    assert not list(tmp_path.iterdir())


def test_the_same_output_of_a_good_trace_lands_where_the_bad_input_test_looks(capsys, tmp_path, monkeypatch):
    """What makes the test above able to fail: its ``-o`` names and its working folder are where output goes."""
    monkeypatch.chdir(tmp_path)
    for fmt, name in (("text", "k.txt"), ("md", "k.md"), ("json", "k.json"), ("parquet", "k.parquet")):
        code, _, _ = run(capsys, GRAPH, "--format", fmt, "-o", name)
        assert code == 0 and (tmp_path / name).stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.json", "k.md", "k.parquet", "k.txt"]


@pytest.mark.engine
@pytest.mark.engine_free  # starts `python -m inproc`, which builds no engine
def test_the_command_runs_as_a_process_and_refuses_a_non_trace_in_one_line():
    p = inproc("kernels", str(FIXTURES / "h200" / "gpu_check.json"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "no traceEvents" in p.stderr
