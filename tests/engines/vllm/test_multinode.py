"""vLLM over two nodes on localhost, through its own multi-node launch (``nnodes`` / ``node-rank``).

The head is ``inproc cell`` (the engine core stepped in inproc's process, its executor
waiting for node 1); node rank 1 is ``inproc worker`` (vLLM's headless executor). TP 2
over 2 nodes is one rank per node, each bound to its own core of this 2-core machine.
"""
from __future__ import annotations

import os

import pytest

from inproc import types as st
from inproc.measure import metrics as m
from inproc.record.io import load_results
from tests.conftest import DEFAULT_PROFILE, needs_vllm
from tests.engines.two_nodes import free_port, run_two_nodes
from tests.spawn import child_env, run_main, run_mains

pytestmark = [needs_vllm, pytest.mark.engine]  # every test here starts `python -m inproc`


def two_node_sets(port: int) -> list[str]:
    sets = ["tensor-parallel-size=2", "nnodes=2", "master-addr=127.0.0.1", f"master-port={port}"]
    return [w for s in sets for w in ("--set", s)]


@pytest.mark.long
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one rank per node, one core per rank: needs 2 cores")
def test_two_nodes_measure_a_cell_and_leave_nothing_running(tmp_path):
    port, out = free_port(), tmp_path / "r.json"
    env = child_env()
    run = run_two_nodes(
        ["cell", str(DEFAULT_PROFILE), "--context", "256", "--concurrency", "1", "--duration", "0.5", "--max-output", "32",
         "--seed", "2", *two_node_sets(port), "--set", "env.VLLM_CPU_OMP_THREADS_BIND=0", "--out", str(out)],
        [str(DEFAULT_PROFILE), "--node-rank", "1", *two_node_sets(port), "--set", "env.VLLM_CPU_OMP_THREADS_BIND=1"],
        env, env)
    assert run.head_rc == 0, run.head_err[-3000:]
    assert run.worker_rc == 0, run.worker_err[-3000:]
    assert "waits for node ranks 1..1: run `inproc worker" in run.head_err
    assert "the head is gone" in run.worker_err and run.worker_exit_s is not None and run.worker_exit_s < 60
    assert run.left == [], f"processes left running: {run.left}"
    rec = load_results(out)
    (cell,) = rec.decode
    assert cell.status == st.VALID and cell.figures.output_tokens > 0
    # Tokens counted by the driver are the tokens vLLM's engine core emitted in the window.
    t = cell.trace
    assert m.output_tokens(t, m.window(t)) == t.counters_end.generation_tokens - t.counters_start.generation_tokens
    p = rec.placement
    assert (p.nodes, p.world_size, p.ranks, p.gpus_per_node, p.backend) == (2, 2, ((0,), (1,)), 0, "mp")
    assert p.rendezvous == f"127.0.0.1:{port}"
    assert rec.engine.settings.tensor_parallel_size == 2


BAD_RANKS = [
    (["worker", "--node-rank", "1"], [], "runs on one node (nnodes = 1)"),
    (["worker", "--node-rank", "0"], ["nnodes=2"], "Node rank 0 is the head"),
    (["worker", "--node-rank", "2"], ["nnodes=2"], "Bad --node-rank 2: the profile has nnodes = 2"),
    (["worker", "--node-rank", "1"], ["nnodes=2", "distributed-executor-backend=ray"], "Ray starts vLLM's workers"),
    (["cell", "--context", "256", "--concurrency", "1"], ["nnodes=2", "node-rank=1"], "build the head (node rank 0)"),
]


def _rank_args(command: list[str], sets: list[str]) -> list[str]:
    return [command[0], str(DEFAULT_PROFILE), *command[1:], *[w for s in sets for w in ("--set", s)]]


RAY_CELL = ["cell", str(DEFAULT_PROFILE), "--context", "256", "--concurrency", "1", "--set", "tensor-parallel-size=2",
            "--set", "distributed-executor-backend=ray"]


@pytest.fixture(scope="module")
def refused_children(tmp_path_factory):
    """The cases the adapter refuses as its worker run or build starts (bad worker ranks, Ray's refusal):
    all in one child, one after another (one vLLM import), keyed by case."""
    cases = {repr((c, s)): _rank_args(c, s) for c, s, _ in BAD_RANKS if c[0] == "worker"}
    cases["ray"] = [*RAY_CELL, "--out", str(tmp_path_factory.mktemp("ray") / "r.json")]
    return dict(zip(cases, run_mains(*cases.values(), timeout=300))), cases["ray"][-1]


@pytest.mark.long
@pytest.mark.parametrize("command,sets,needle", BAD_RANKS)
def test_bad_node_ranks_are_one_line_exit_2(command, sets, needle, tmp_path, capfd, request):
    args = _rank_args(command, sets)
    if command[0] == "cell":  # refused before the engine is built: in this process, where vLLM is imported already
        p = run_main(capfd, *args, "--out", str(tmp_path / "r.json"))
    else:
        p = request.getfixturevalue("refused_children")[0][repr((command, sets))]
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0], p.stderr[-2000:]
    assert "Traceback" not in p.stderr and not (tmp_path / "r.json").exists()


@pytest.mark.long
def test_ray_on_this_cpu_is_vllms_refusal_in_one_line(refused_children):
    results, out = refused_children
    p = results["ray"]
    assert not os.path.exists(out)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("Error: "), p.stderr[-2000:]
    # vLLM's own words (Ray is absent here; with Ray installed it says the CPU platform does not support it).
    assert "vLLM could not build the engine" in lines[0] and "ray" in lines[0].lower()
    assert "validation error" not in lines[0]
