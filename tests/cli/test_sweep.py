"""``inproc sweep`` as a user runs it: bad input is one line and exit 2; real sweeps on both engines
(a fresh engine per variant, a failed variant recorded, SIGKILL then --resume)."""
from __future__ import annotations

import functools
import json
import signal
import subprocess
import time

import pytest

from inproc import types as st
from inproc.profiles.spec import load_profile
from inproc.record.io import load_results
from inproc.render import fmt
from inproc.sweep.manifest import DONE, FAILED, RUNNING, Sweep, SweepPlan, VariantRun, load_sweep, write_sweep
from inproc.sweep.plan import parse_varies, plan_variants
from inproc.sweep.summary import summarize
from tests.cli.test_cli import inproc
from tests.conftest import DEFAULT_PROFILE, DEFAULT_PROFILES, needs_sglang, needs_vllm
from tests.spawn import run_main, start_inproc

pytestmark = pytest.mark.engine  # every test here starts `python -m inproc`

P = str(DEFAULT_PROFILE)
CELL = ["--cells", "256x8", "--duration", "0.5", "--max-output", "64"]


def _one_line_exit_2(p, needle):
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, p.stderr
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in p.stderr, p.stderr
    assert needle in lines[0], lines[0]


@pytest.mark.parametrize("args,needle", [
    ([], "at least one --vary"),
    (["--vary", "max-num-seqs"], "Give KEY=V1,V2"),
    (["--vary", "max-num-seqs="], "no values"),
    (["--vary", "max num=1"], "Bad --vary key 'max num'"),
    (["--vary", "max-num-seqs=4,,8"], "an empty value"),
    (["--vary", "max-num-seqs=4,8", "--vary", "block-size=32", "--zip"], "max-num-seqs has 2, block-size has 1"),
    (["--vary", "max-num-seqs.x=1,2"], "not a table"),
    (["--vary", "max-num-seqs=4,8", "--cells", "256"], "Bad cell '256'"),
    (["--vary", "max-num-seqs=4,8", "--cells", "256x8", "--contexts", "256"], "--cells"),
    (["--vary", "max-num-seqs=4,8", "--cells", "8Kx1"], "above the model's maximum"),
    (["--vary", "max-num-seqs=4,8", "--resume", "--force"], "give one of them"),
])
def test_bad_input_is_one_line_exit_2_and_makes_no_folder(args, needle, tmp_path, capfd):
    out = tmp_path / "sweep"
    extra = [] if "--cells" in args else ["--cells", "256x8"]
    _one_line_exit_2(run_main(capfd, "sweep", P, *args, *extra, "--out", str(out)), needle)
    assert not out.exists()


def test_an_existing_folder_is_not_reused_without_resume_or_force(tmp_path, capfd):
    inproc = functools.partial(run_main, capfd)  # each refusal comes before any variant starts
    (tmp_path / "notes.txt").write_text("mine")
    _one_line_exit_2(inproc("sweep", P, "--vary", "max-num-seqs=4,8", *CELL, "--out", str(tmp_path)), "not empty")
    _one_line_exit_2(inproc("sweep", P, "--vary", "max-num-seqs=4,8", *CELL, "--out", str(tmp_path / "new"), "--resume"),
                     "No sweep.json")
    # A sweep planned from a copy of the profile, as the command below plans it.
    profile_file = tmp_path / "p.toml"
    profile_file.write_text(DEFAULT_PROFILE.read_text().replace('"models/', f'"{DEFAULT_PROFILE.parent}/models/'))
    profile = load_profile(profile_file)
    varies = parse_varies(("max-num-seqs=4,8",))
    plan = SweepPlan(profile.path, profile.name, profile.engine, varies, False, ("--no-prefill", *CELL), 1,
                     {"model": profile.model, "engine_args": profile.engine_args, "env": profile.env})
    write_sweep(tmp_path, Sweep(plan, tuple(VariantRun(v) for v in plan_variants(varies)), "inproc sweep x", "now"))
    before = (tmp_path / "sweep.json").read_text()
    same = [str(profile_file), "--vary", "max-num-seqs=4,8", *CELL, "--out", str(tmp_path)]
    _one_line_exit_2(inproc("sweep", *same), "--resume")
    other = [str(profile_file), "--vary", "max-num-seqs=4,16", *CELL, "--out", str(tmp_path), "--resume"]
    _one_line_exit_2(inproc("sweep", *other), "Cannot resume the sweep in")
    assert "different --vary values" in inproc("sweep", *other).stderr
    profile_file.write_text(profile_file.read_text().replace("max-num-batched-tokens = 2048", "max-num-batched-tokens = 1024"))
    _one_line_exit_2(inproc("sweep", *same, "--resume"), "different profile contents")
    assert (tmp_path / "sweep.json").read_text() == before


@needs_vllm
def test_an_unknown_engine_argument_names_the_closest(tmp_path, capfd):
    p = run_main(capfd, "sweep", P, "--vary", "max-num-seq=4,8", *CELL, "--out", str(tmp_path / "s"))
    _one_line_exit_2(p, "Unknown vLLM argument 'max-num-seq'. Closest: max-num-seqs")
    assert not (tmp_path / "s").exists()


def _start(*args):
    return start_inproc("sweep", *args, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(path, test, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            s = json.loads(path.read_text())
            if test(s):
                return s
        except (OSError, json.JSONDecodeError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{path} never reached the state waited for")


def _children_of(out):
    import psutil

    return [p for p in psutil.process_iter(["cmdline"]) if str(out) in " ".join(p.info["cmdline"] or [])]


def _check_max_num_seqs_sweep(out, small, large, key):
    """The small limit's cell queues and names it; the large one's is Valid and best; the summary says so."""
    s = json.loads((out / "sweep.json").read_text())
    assert [v["status"] for v in s["variants"]] == [DONE, DONE] and s["finished"]
    files = [out / v["file"] for v in s["variants"]]
    recs = [load_results(f) for f in files]
    (q,), (v,) = recs[0].decode, recs[1].decode
    assert (q.context, q.concurrency, v.context, v.concurrency) == (256, 8, 256, 8)
    assert q.status == st.QUEUED and f"max_num_seqs={small} < C=8" in q.reason
    assert v.status == st.VALID and v.figures.output_tokens > 0
    assert recs[0].capacity.max_num_seqs == small and recs[1].capacity.max_num_seqs == large
    assert recs[0].profile.overrides == (f"{key}={small}",) and recs[0].prefill == ()  # decode cells only
    assert recs[0].plan.seed == recs[1].plan.seed == s["plan"]["seed"]  # the same prompts in every engine
    assert recs[0].command.startswith("inproc run ") and f"--set {key}={small}" in recs[0].command
    summary = summarize(load_sweep(out), out)
    (cell,) = summary.cells
    assert cell.best.name == f"{key}={large}" and cell.best.total_tok_s == pytest.approx(v.figures.total_tok_s)
    md = (out / "sweep.md").read_text()
    assert f"| {key}={small} | Requests queued | {fmt.tok_s(q.figures.total_tok_s)} |" in md
    assert f"max_num_seqs={small} < C=8" in md
    assert f"| {key}={large} ★ | Valid | {fmt.tok_s(v.figures.total_tok_s)} |" in md
    assert f"Best: {key}={large} ({fmt.tok_s(v.figures.total_tok_s)} tok/s)" in md
    return recs


@pytest.mark.long
@needs_vllm
def test_vllm_sweep_killed_then_resumed_runs_only_the_missing_variant(tmp_path):
    out = tmp_path / "sweep"
    args = [P, "--vary", "max-num-seqs=4,8", *CELL, "--out", str(out)]
    proc = _start(*args)
    try:
        _wait_for(out / "sweep.json", lambda s: [v["status"] for v in s["variants"]] == [DONE, RUNNING])
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    killed = json.loads((out / "sweep.json").read_text())  # valid JSON, the second variant not finished
    assert [v["status"] for v in killed["variants"]] == [DONE, RUNNING] and not killed["finished"]
    deadline = time.monotonic() + 5  # well before the child could have finished its ~20 s alone
    while _children_of(out) and time.monotonic() < deadline:  # the child dies with its parent
        time.sleep(0.2)
    assert not _children_of(out) and not (out / killed["variants"][1]["file"]).exists()
    first = out / killed["variants"][0]["file"]
    stamp = first.stat().st_mtime_ns
    p = inproc("sweep", *args, "--resume")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "[1/2] max-num-seqs=4: done before, skipped" in p.stderr
    assert "[2/2] max-num-seqs=8: done" in p.stderr
    assert first.stat().st_mtime_ns == stamp  # not measured again
    s = json.loads((out / "sweep.json").read_text())
    assert [v["attempts"] for v in s["variants"]] == [1, 2]
    _check_max_num_seqs_sweep(out, 4, 8, "max-num-seqs")
    html = inproc("report", str(out), "--format", "html")
    assert html.returncode == 0 and html.stdout.count("<svg") == 1
    assert "Decode 256 × 8: total tok/s by variant" in html.stdout and ">4</text>" in html.stdout
    csv = inproc("report", str(out), "--format", "csv").stdout.splitlines()
    assert len(csv) == 3 and csv[2].split(",")[2:5] == ["max-num-seqs=8", st.VALID, "yes"]


@pytest.mark.long
@needs_vllm
def test_vllm_dotted_key_reaches_the_engine_and_a_bad_value_is_recorded(tmp_path):
    out = tmp_path / "sweep"
    p = inproc("sweep", P, "--vary", "compilation-config.max_cudagraph_capture_size=4,oops",
               "--set", "compilation-config.cudagraph_mode=NONE", "--set", "env.VLLM_LOGGING_LEVEL=INFO",
               "--cells", "256x2", "--duration", "0.5", "--max-output", "64", "--out", str(out))
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads((out / "sweep.json").read_text())
    good, bad = s["variants"]
    assert good["status"] == DONE and bad["status"] == FAILED
    assert "max_cudagraph_capture_size" in bad["error"] and "valid integer" in bad["error"]
    rec = load_results(out / good["file"])
    # Merged into the profile's table with the --set key, then resolved by vLLM itself (its default is None).
    assert rec.profile.engine_args["compilation-config"] == {"cudagraph_mode": "NONE", "max_cudagraph_capture_size": 4}
    assert rec.engine.settings.shown["max_cudagraph_capture_size"] == 4 and rec.engine.settings.shown["cudagraph_mode"] == "NONE"
    assert rec.profile.env["VLLM_LOGGING_LEVEL"] == "INFO" and " INFO " in (out / good["log"]).read_text()
    (cell,) = rec.decode
    assert cell.status == st.VALID and cell.figures.output_tokens > 0
    assert cell.figures.anatomy.graph_step_share == {"NONE": 1.0}  # eager on the CPU: no batch ran in a graph
    md = (out / "sweep.md").read_text()
    assert "1 measured, 1 failed" in md and "## Failed variants" in md and bad["error"] in md
    assert not (out / bad["file"]).exists()


@pytest.mark.long
@needs_vllm
def test_a_sweep_where_every_variant_fails_exits_1_and_says_why(tmp_path):
    out = tmp_path / "sweep"
    p = inproc("sweep", P, "--vary", "max-num-seqs=many,few", *CELL, "--out", str(out))
    assert p.returncode == 1 and "Error: no variant was measured" in p.stderr, p.stderr[-2000:]
    s = json.loads((out / "sweep.json").read_text())
    assert [v["status"] for v in s["variants"]] == [FAILED, FAILED] and s["finished"]
    assert all("max-num-seqs" in v["error"] or "max_num_seqs" in v["error"] for v in s["variants"])
    assert "0 measured, 2 failed" in (out / "sweep.md").read_text()


@pytest.mark.long
@needs_sglang
def test_sglang_sweep_of_max_running_requests(tmp_path):
    out = tmp_path / "sweep"
    p = inproc("sweep", str(DEFAULT_PROFILES["sglang"]), "--vary", "max-running-requests=4,8", *CELL, "--out", str(out))
    assert p.returncode == 0, p.stderr[-3000:]
    recs = _check_max_num_seqs_sweep(out, 4, 8, "max-running-requests")
    assert all(r.engine.name == "sglang" and r.engine.settings.graph_capture_memory_bytes is None for r in recs)
    assert recs[1].engine.settings.shown["max_running_requests"] == 8

