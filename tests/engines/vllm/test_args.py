"""Profiles against the installed vLLM: the published vLLM matrix's launch command round-tripped, check, show, and n-gram spec decode for real."""
from __future__ import annotations

import dataclasses
import json
import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from inproc.profiles.spec import load_profile

from inproc.engines.vllm import args as vllm_args
from tests.conftest import needs_vllm
from tests.spawn import run_child

pytestmark = needs_vllm

ROOT = Path(__file__).resolve().parents[3]
LAUNCH_COMMAND = ROOT / "tests" / "fixtures" / "reference" / "vllm-deepseek-v4.1-flash-rtxpro6000x8.cmd"
SHIPPED = ROOT / "launch_profiles" / "vllm-deepseek-v4.1-flash-rtxpro6000x8.toml"
NGRAM = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama-ngram.toml"
# What `profile import` leaves out of that command (server-only), and the
# EngineArgs fields those flags fill; everything else must come through identical.
DROPPED = {"--tool-call-parser", "--enable-auto-tool-choice", "--reasoning-parser", "--served-model-name"}
DROPPED_FIELDS = {"served_model_name", "reasoning_parser"}


def _published_command() -> list[str]:
    """The published vLLM matrix's launch command, as its page printed it (docs/reference-matrices.md)."""
    lines = [ln for ln in LAUNCH_COMMAND.read_text().splitlines() if ln and not ln.startswith("#")]
    return shlex.split(lines[0])


def _differing(a, b) -> set[str]:
    return {f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    from inproc.profiles.importer import import_command, render

    result = import_command(_published_command())
    path = tmp_path_factory.mktemp("imported") / "vllm-ref.toml"
    path.write_text(render(result))
    return result, load_profile(path)


def test_round_trip_gives_what_vllm_serve_parses(imported):
    result, profile = imported
    argv = _published_command()
    assert argv[:2] == ["vllm", "serve"]
    ours = vllm_args.parse_profile(profile.model, profile.engine_args)
    theirs = vllm_args.reference_engine_args(argv[2:])
    assert _differing(ours, theirs) == DROPPED_FIELDS
    assert {flag for flag, _ in result.dropped} == DROPPED and result.withheld == ()
    assert profile.gpus == 8 and ours.compilation_config.cudagraph_capture_sizes[-1] == 768


def test_shipped_profile_is_the_imported_command(imported):
    _, profile = imported
    shipped = load_profile(SHIPPED)
    assert shipped.engine_args == profile.engine_args
    ours = vllm_args.parse_profile(shipped.model, shipped.engine_args)
    theirs = vllm_args.reference_engine_args(_published_command()[2:])
    # The shipped profile names the model by id at the revision the command served from the cache.
    assert _differing(ours, theirs) == DROPPED_FIELDS | {"model"}
    assert ours.model == "deepseek-ai/DeepSeek-V4.1-Flash-1017" and ours.revision in theirs.model


def test_check_gpu_profile_on_cpu_runs_argument_level(capsys):
    from inproc.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["profile", "check", str(SHIPPED)])
    out, err = capsys.readouterr()
    assert e.value.code == 0, err
    assert "ok       parallel       TP 8 = 8 GPUs, as declared" in out
    assert "ok       settings       CacheConfig, ParallelConfig, SchedulerConfig, speculative-config" in out
    assert "skipped  engine config  needs 8 GPUs" in out


def test_check_cpu_profile_builds_the_engine_config(capsys):
    from inproc.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["profile", "check", str(NGRAM), "--set", "max-num-seqs=4"])
    out, err = capsys.readouterr()
    assert e.value.code == 0, err
    assert "ok       engine config  VllmConfig built for cpu" in out and "skipped" not in out


def test_show_lists_resolved_engine_args(capsys):
    from inproc.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["profile", "show", str(NGRAM), "--set", "max-num-seqs=2"])
    out, _ = capsys.readouterr()
    assert e.value.code == 0
    assert "command   vllm serve --model " in out and "--max-num-seqs 2" in out
    assert '  speculative_config = {"method": "ngram", "num_speculative_tokens": 3' in out
    assert "  max_num_seqs = 2" in out and "  block_size = 32" in out


def test_import_writes_no_credentials(tmp_path, capsys):
    from inproc.cli.main import main

    key, token = "sk-" + "k" * 32, "hf_" + "t" * 32
    out_file = tmp_path / "p.toml"
    with pytest.raises(SystemExit) as e:
        main(["profile", "import", "-o", str(out_file), "--", f"HF_TOKEN={token}", "vllm", "serve", "org/m",
              "--api-key", key, f"--hf-token={token}", "--port", "8000", "-tp", "2"])
    _, err = capsys.readouterr()
    assert e.value.code == 0, err
    text = out_file.read_text()
    assert key not in text and token not in text and "HF_TOKEN" in err
    p = load_profile(out_file)
    assert p.engine_args == {"tensor-parallel-size": 2} and p.env == {} and p.gpus == 2
    with pytest.raises(SystemExit) as e:  # never silently overwritten
        main(["profile", "import", "-o", str(out_file), "--", "vllm", "serve", "org/m"])
    assert e.value.code == 2 and "already exists" in capsys.readouterr().err


_NGRAM_RUN = textwrap.dedent("""
    import json, os
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    from inproc.engines import build_engine
    from inproc.types import RequestSpec
    from inproc.profiles.spec import load_profile
    engine = build_engine(load_profile({path!r}).launch)
    prompt = list(range(100, 140)) * 4
    for i in range(4):
        engine.add_request(RequestSpec(f"r{{i}}", prompt, max_tokens=32, temperature=0.0))
    steps, tokens = 0, 0
    while engine.has_unfinished():
        tokens += sum(len(d.new_token_ids) for d in engine.step().deltas)
        steps += 1
    print("RESULT " + json.dumps({{"steps": steps, "tokens": tokens, "counters": engine.counters().to_dict()}}))
    engine.shutdown()
""")


@pytest.mark.long
@pytest.mark.engine  # builds the engine in a child process
def test_ngram_profile_speculates_for_real():
    """Builds the n-gram profile's engine (in a child: one vLLM engine per process) and decodes greedily."""
    run = run_child([sys.executable, "-c", _NGRAM_RUN.format(path=str(NGRAM))], timeout=300)
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, run.stdout[-2000:] + run.stderr[-3000:]
    result = json.loads(line[len("RESULT "):])
    c = result["counters"]
    assert result["tokens"] == 4 * 32
    assert c["spec_drafts"] > 0 and c["spec_accepted_tokens"] > 0
    assert result["steps"] < 32  # accepted drafts: fewer engine steps than tokens per request
