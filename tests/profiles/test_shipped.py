"""The shipped profiles: each one listed, loadable and checked; each CPU profile's matrix shows what its comment says."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from inproc import engines
from inproc.profiles.check import iter_checks
from inproc.profiles.spec import load_profile, profiles_dir, shipped_profiles
from tests.conftest import CPU_SUPPORT, INSTALLED, PROFILES, ROOT

#: The line each CPU profile carries: "# Its matrix shows: Valid, Requests queued, Over capacity."
CLAIM = re.compile(r"^# Its matrix shows: (?P<statuses>[^.]+)\.$", re.MULTILINE)
FILES = sorted(PROFILES.glob("*.toml"))
CPU = [p for p in FILES if load_profile(p).gpus == 0]


def test_every_profile_file_is_shipped_and_checks():
    assert profiles_dir() == PROFILES and FILES
    assert shipped_profiles() == [f"launch_profiles/{p.name}" for p in FILES]
    for path in FILES:
        profile = load_profile(path)
        assert profile.engine in engines.names() and profile.path == str(path)
        if engines.get(profile.engine).installed():
            lines = list(iter_checks(profile))  # raises at the first problem
            assert [ln.check for ln in lines][:3] == ["profile", "model", "arguments"]
            assert all(ln.status in ("ok", "note", "skipped") for ln in lines)


@pytest.mark.parametrize("path", CPU, ids=lambda p: p.stem)
def test_cpu_profile_says_what_its_matrix_shows(path):
    found = CLAIM.search(path.read_text())
    assert found, f"{path.name} has no '# Its matrix shows: ...' line"
    claimed = [s.strip() for s in found["statuses"].split(",")]
    assert claimed and all(s in ("Valid", "Requests queued", "Over capacity", "Looped") for s in claimed)


@pytest.mark.parametrize("path", CPU, ids=lambda p: p.stem)
def test_cpu_profile_matrix_shows_what_its_comment_says(path, tmp_path):
    """The shipped matrix, run for real with 4-step windows (the statuses do not depend on the window)."""
    profile = load_profile(path)
    if not INSTALLED[profile.engine]:
        pytest.skip(f"{profile.engine} is not installed here")
    claimed = {s.strip() for s in CLAIM.search(path.read_text())["statuses"].split(",")}
    out = tmp_path / "r.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(CPU_SUPPORT)]))
    p = subprocess.run([sys.executable, "-m", "inproc", "run", str(path), "--window-steps", "4", "--prefill-samples", "1",
                        "--seed", "3", "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    cells = json.loads(out.read_text())["decode"]
    shown = {c["status"] for c in cells}
    odd = [f"{c['context']}x{c['concurrency']}: {c['status']}: {c['reason']}" for c in cells if c["status"] not in claimed]
    assert shown == claimed, f"{path.name} shows {sorted(shown)}, its comment says {sorted(claimed)}; {odd}"
