"""Tensor parallelism: rank 0 stepped here, rank 1 spawned as SGLang spawns it, on 2 CPU cores.

A process holds one SGLang scheduler at a time (the session engine is TP 1), so the
TP 2 engine is built in a child Python, which reports what it saw as JSON.
"""
from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

from tests.engines.sglang.conftest import PROFILE, needs_sglang
from tests.spawn import child_env, run_child

pytestmark = [needs_sglang, pytest.mark.engine]  # builds the engine in a child process

CHILD = textwrap.dedent(
    """
    import json, os, sys, tempfile
    tempfile.tempdir = sys.argv[1]  # this engine's files, and nobody else's, land here
    import psutil
    from inproc.engines import build_engine
    from inproc.types import RequestSpec
    from inproc.profiles.spec import load_profile

    engine = build_engine(load_profile(sys.argv[2]).with_overrides(("tp-size=2",)).launch)
    peers = [p.pid for p in engine._launched.peers]
    lengths = {"a": 3, "b": 6, "c": 9}
    for rid, n in lengths.items():
        engine.add_request(RequestSpec(rid, list(range(100, 140 + len(rid))), n, temperature=0.0))
    tokens, running = {}, []
    while engine.has_unfinished():
        res = engine.step()
        running.append(res.num_running)
        for d in res.deltas:
            tokens.setdefault(d.request_id, []).extend(d.new_token_ids)
    reset = engine.reset_prefix_cache()
    engine.shutdown()
    print(json.dumps({
        "tp_size": engine.info.settings.tensor_parallel_size, "peers": peers, "lengths": lengths,
        "tokens": {k: len(v) for k, v in tokens.items()}, "output_lengths": engine.output_lengths,
        "running": running, "reset": reset,
        # torch's compile cache (torchinductor_<user>) is meant to outlive the process.
        "tmp_left": [f for f in os.listdir(sys.argv[1]) if not f.startswith("torchinductor_")],
        "children_left": [c.pid for c in psutil.Process().children(recursive=True)],
    }))
    """
)


@pytest.mark.long
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="TP 2 binds one core per rank: needs 2 cores")
def test_tp2_on_cpu_steps_in_lockstep_and_cleans_up(tmp_path):
    env = child_env(sglang_support=True, SGLANG_USE_CPU_ENGINE="1", SGLANG_CPU_OMP_THREADS_BIND="0|1")  # one core per rank
    proc = run_child([sys.executable, "-c", CHILD, str(tmp_path), str(PROFILE)], env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["tp_size"] == 2 and len(report["peers"]) == 1
    assert report["tokens"] == report["lengths"] == report["output_lengths"]
    # The overlap loop's last iteration runs no batch: it processes the last result.
    busy = [n for n in report["running"] if n]
    assert busy[0] == 3 and busy[-1] == 1 and report["running"][-1] == 0
    assert report["reset"] is True
    assert report["tmp_left"] == [] and report["children_left"] == []
