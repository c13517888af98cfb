"""SGLang over two nodes on localhost (``--nnodes 2 --node-rank R --dist-init-addr``).

Rank 0's scheduler is stepped in the head's process (``inproc cell``); node rank 1 is
``inproc worker``, which starts its TP rank with SGLang's own launcher. Rank 0's
broadcast ShutdownReq ends node 1's scheduler, and the worker then exits.
"""
from __future__ import annotations

import os

import pytest

from inproc import types as st
from inproc.record.io import load_results
from tests.engines.sglang.conftest import PROFILE, needs_sglang
from tests.engines.two_nodes import free_port, run_two_nodes
from tests.spawn import child_env, run_inproc

pytestmark = [needs_sglang, pytest.mark.engine]  # every test here starts `python -m inproc`


def two_node_sets(port: int) -> list[str]:
    sets = ["tp-size=2", "nnodes=2", f"dist-init-addr=127.0.0.1:{port}"]
    return [w for s in sets for w in ("--set", s)]


def node_env(tmp, core: int) -> dict[str, str]:
    # One core per node; SGLang indexes its bind list by the rank's device on its node (0 on each).
    return {**child_env(sglang_support=True), "TMPDIR": str(tmp), "SGLANG_CPU_OMP_THREADS_BIND": str(core)}


@pytest.mark.long
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one rank per node, one core per rank: needs 2 cores")
def test_two_nodes_measure_a_cell_and_leave_nothing_running(tmp_path):
    port, out, tmp = free_port(), tmp_path / "r.json", tmp_path / "tmp"
    tmp.mkdir()
    run = run_two_nodes(
        ["cell", str(PROFILE), "--context", "256", "--concurrency", "1", "--duration", "0.5", "--max-output", "16",
         "--seed", "2", *two_node_sets(port), "--out", str(out)],
        [str(PROFILE), "--node-rank", "1", *two_node_sets(port)],
        node_env(tmp, 0), node_env(tmp, 1))
    assert run.head_rc == 0, run.head_err[-3000:]
    assert run.worker_rc == 0, run.worker_err[-3000:]
    assert "exited with status 0" in run.worker_err and run.worker_exit_s is not None and run.worker_exit_s < 60
    assert run.left == [], f"processes left running: {run.left}"
    # Both nodes' IPC placeholder files are gone (torch's compile cache is meant to stay).
    assert [f for f in os.listdir(tmp) if not f.startswith("torchinductor_")] == []
    rec = load_results(out)
    (cell,) = rec.decode
    assert cell.status == st.VALID and cell.figures.output_tokens > 0
    p = rec.placement
    assert (p.nodes, p.world_size, p.ranks, p.gpus_per_node, p.rendezvous) == (2, 2, ((0,), (1,)), 0, f"127.0.0.1:{port}")


@pytest.mark.parametrize("args,needle", [
    (["--node-rank", "1"], "runs on one node (nnodes = 1)"),
    (["--node-rank", "1", "--set", "nnodes=2"], "no dist-init-addr"),
    (["--node-rank", "3", "--set", "nnodes=2", "--set", "dist-init-addr=127.0.0.1:5000"], "Bad --node-rank 3"),
    (["--node-rank", "1", "--set", "nnodes=2", "--set", "dist-init-addr=127.0.0.1"], "Bad dist-init-addr"),
])
@pytest.mark.long
def test_bad_worker_input_is_one_line_exit_2(args, needle):
    p = run_inproc("worker", str(PROFILE), *args, timeout=300)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0], p.stderr[-2000:]
