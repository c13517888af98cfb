"""A run killed with SIGKILL mid-matrix, then resumed: every cell once, nothing measured twice."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from inproc import types as st
from inproc.record.io import cells_dir, load_results
from tests.conftest import DEFAULT_PROFILE, needs_vllm
from tests.spawn import inproc_command, run_child, start_child, start_inproc

pytestmark = pytest.mark.engine  # every test here starts `python -m inproc`

FLAGS = ["--contexts", "256,512", "--concurrency", "1,2,3", "--duration", "0.6", "--max-output", "32",
         "--prefill-contexts", "256", "--prefill-samples", "1", "--seed", "5"]


def _cells(path) -> int:
    """Decode cells saved so far: their cell files (the manifest lists the newest only at its next write)."""
    return len(list(cells_dir(path).glob("decode-*.json.gz")))


def _files(path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in [path, *cells_dir(path).iterdir()]}


@pytest.mark.long
@needs_vllm
def test_sigkill_then_resume(tmp_path):
    out = tmp_path / "r.json"
    cmd = inproc_command("run", str(DEFAULT_PROFILE), *FLAGS)
    proc = start_child([*cmd, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    try:
        while time.time() < deadline and _cells(out) < 2:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    killed = load_results(out)  # every file is whole: each was replaced atomically
    assert not killed.finished and 2 <= len(killed.decode) < 6
    files = _files(out)

    # A different plan is refused with one line, and the file is untouched.
    bad = run_child([*cmd, "--resume", str(out), "--duration", "0.7"], timeout=120)
    assert bad.returncode == 2 and "different plan" in bad.stderr and "window_s" in bad.stderr
    assert _files(out) == files

    done = run_child([*cmd, "--resume", str(out)])
    assert done.returncode == 0, done.stderr[-2000:]
    final = json.loads(out.read_text())
    assert final["finished"] and final["created"] == killed.created and any(n.startswith("resumed ") for n in final["notes"])
    keys = [(c["context"], c["concurrency"]) for c in final["decode"]]
    assert sorted(keys) == sorted((L, C) for L in (256, 512) for C in (1, 2, 3)) and len(set(keys)) == 6
    assert len(final["prefill"]) == 1
    # Cells measured before the kill are kept exactly as they were, not measured again: their files untouched.
    for before in killed.decode:
        name = f"decode-{before.key}.json.gz"
        assert (cells_dir(out) / name).read_bytes() == files[name]
        after = next(c for c in final["decode"] if (c["context"], c["concurrency"]) == (before.context, before.concurrency))
        assert after["total_tok_s"] == before.figures.total_tok_s
    assert all(c["status"] in (st.VALID, st.QUEUED) for c in final["decode"]), [(c["status"], c["reason"]) for c in final["decode"]]


@needs_vllm
def test_ctrl_c_saves_a_valid_file(tmp_path):
    out = tmp_path / "r.json"
    proc = start_inproc("run", str(DEFAULT_PROFILE), *FLAGS, "--out", str(out), stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and _cells(out) < 1:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "saved" in err
    rec = json.loads(out.read_text())
    assert not rec["finished"] and any("interrupted" in n for n in rec["notes"])
    assert 1 <= len(rec["decode"]) < 6
