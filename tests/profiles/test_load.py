"""Profiles without an engine: schema, shipped profiles, overrides, the TOML writer, credentials, command splitting."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from inproc.profiles import toml_io as profile_toml, redact
from inproc.errors import UsageError
from inproc.profiles.spec import MatrixSettings, load_profile, shipped_profiles
from inproc.profiles.importer import split_command

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "launch_profiles"
VLLM_PUBLISHED = PROFILES / "vllm-deepseek-v4.1-flash-rtxpro6000x8.toml"
SGLANG_PUBLISHED = PROFILES / "sglang-deepseek-v4-flash-vision-h200x4.toml"
PUBLISHED_CONTEXTS = (8192, 16384, 32768, 65536, 131072, 262144, 524288, 1043456)


def test_vllm_matrix_profile_matches_its_launch_command():
    p = load_profile(VLLM_PUBLISHED)
    a = p.engine_args
    assert (p.engine, p.model, p.gpus) == ("vllm", "deepseek-ai/DeepSeek-V4.1-Flash-1017", 8)
    assert a["revision"] == "1bae0e1088993b9b82de08f59de5be5a34e42170"
    assert a["tokenizer-mode"] == "deepseek_v41"
    assert (a["tensor-parallel-size"], a["enable-expert-parallel"], a["block-size"]) == (8, True, 64)
    assert (a["gpu-memory-utilization"], a["max-num-batched-tokens"]) == (0.95, 3840)
    spec = a["speculative-config"]
    assert spec == {"method": "dspark", "num_speculative_tokens": 5, "revision": a["revision"],
                    "enable_adaptive_verification": True, "use_local_argmax_reduction": True}
    cc = a["compilation-config"]
    assert cc["max_cudagraph_capture_size"] == 768 and len(cc["cudagraph_capture_sizes"]) == 55
    assert cc["cudagraph_capture_sizes"] == sorted(cc["cudagraph_capture_sizes"]) and cc["cudagraph_capture_sizes"][-1] == 768
    m = p.matrix
    assert m.contexts == PUBLISHED_CONTEXTS and m.prefill_list == PUBLISHED_CONTEXTS + (1048512,)
    assert (m.concurrency, m.window_s, m.max_output) == ((1, 2, 4, 8, 16, 32, 64, 128), 30, 4096)
    assert "RTX PRO 6000" in p.hardware


def test_sglang_matrix_profile_matches_its_launch_command():
    p = load_profile(SGLANG_PUBLISHED)
    assert (p.engine, p.model, p.gpus) == ("sglang", "deepseek-ai/DeepSeek-V4-Flash-Vision-Exp", 4)
    assert p.engine_args == {"trust-remote-code": True, "tp-size": 4, "context-length": 1048576,
                             "mem-fraction-static": 0.850786, "enable-metrics": True, "moe-runner-backend": "marlin"}
    assert p.matrix.contexts == PUBLISHED_CONTEXTS and p.matrix.prefill_list == PUBLISHED_CONTEXTS + (1048576,)
    assert "decode warm-up" in p.notes and "H200" in p.hardware


def test_no_shipped_profile_holds_a_credential():
    for name in shipped_profiles():
        text = (ROOT / name).read_text()
        assert redact.scrub_text(text) == text, name
        p = load_profile(ROOT / name)
        assert not any(redact.is_secret_name(k) for k in p.engine_args), name
        assert not any(redact.is_secret_env(k, v) for k, v in p.env.items()), name


def test_matrix_defaults_are_the_published_grid(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('engine = "vllm"\nmodel = "org/model"\n')
    p = load_profile(f)
    assert p.matrix == MatrixSettings() and p.model == "org/model" and p.gpus == 0


def test_relative_model_resolves_against_the_profile_folder(tmp_path):
    (tmp_path / "models" / "m").mkdir(parents=True)
    f = tmp_path / "p.toml"
    f.write_text('engine = "sglang"\nmodel = "models/m"\n[engine_args]\ntp_size = 2\n')
    p = load_profile(f)
    assert p.model == str(tmp_path / "models" / "m")
    assert p.engine_args == {"tp-size": 2}  # "_" spellings normalised to the CLI's "-"


def test_overrides_parse_toml_values_and_are_recorded():
    p = load_profile(PROFILES / "cpu-vllm-tiny-llama-ngram.toml")
    q = p.with_overrides(("max-num-seqs=4", "enforce_eager=false", "tokenizer-mode=slow",
                          "speculative-config={method = 'ngram', num_speculative_tokens = 2}"))
    assert q.engine_args["max-num-seqs"] == 4 and q.engine_args["enforce-eager"] is False
    assert q.engine_args["tokenizer-mode"] == "slow"
    assert q.engine_args["speculative-config"] == {"method": "ngram", "num_speculative_tokens": 2}
    assert q.overrides[0] == "max-num-seqs=4" and p.engine_args["max-num-seqs"] == 8
    r = p.with_overrides(("speculative-config.num_speculative_tokens=5", "compilation-config.pass_config.x=1"))
    assert r.engine_args["speculative-config"] == {"method": "ngram", "num_speculative_tokens": 5,
                                                   "prompt_lookup_max": 3, "prompt_lookup_min": 2}
    assert r.engine_args["compilation-config"] == {"pass_config": {"x": 1}}
    assert p.engine_args["speculative-config"]["num_speculative_tokens"] == 3  # the profile itself is untouched
    with pytest.raises(UsageError, match="KEY=VALUE"):
        p.with_overrides(("max-num-seqs",))
    with pytest.raises(UsageError, match="not a table"):
        p.with_overrides(("max-num-seqs.x=1",))
    with pytest.raises(UsageError, match="the model is the profile's 'model' key"):
        p.with_overrides(("model=other",))


def test_env_overrides_set_the_engine_environment():
    p = load_profile(PROFILES / "cpu-vllm-tiny-llama.toml")
    q = p.with_overrides(("env.VLLM_CPU_KVCACHE_SPACE=2", 'env.SOME_FLAG="a b"', "env.LIST=[1,2]"))
    assert q.env["VLLM_CPU_KVCACHE_SPACE"] == "2" and q.env["SOME_FLAG"] == "a b" and q.env["LIST"] == "[1,2]"
    assert q.launch.env == q.env and "env" not in q.engine_args and p.env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert q.overrides[0] == "env.VLLM_CPU_KVCACHE_SPACE=2"
    with pytest.raises(UsageError, match="'1X' is not an environment variable name"):
        p.with_overrides(("env.1X=1",))


def test_matrix_cells_in_a_profile(tmp_path):
    src = (PROFILES / "cpu-vllm-tiny-llama.toml").read_text().replace("[matrix]", '[matrix]\ncells = ["256x8", "1Kx2"]')
    path = tmp_path / "cells.toml"
    path.write_text(src.replace('model = "models/tiny-llama"', f'model = "{PROFILES / "models" / "tiny-llama"}"'))
    m = load_profile(path).matrix
    assert m.cells == ((256, 8), (1024, 2)) and m.contexts == (256, 1024) and m.concurrency == (2, 8)
    path.write_text(src.replace('cells = ["256x8", "1Kx2"]', "cells = [256]"))
    with pytest.raises(UsageError, match="cells must be a non-empty list of CONTEXTxCONCURRENCY"):
        load_profile(path)


def test_toml_writer_round_trips():
    doc = {"s": 'quote " back \\ tab \t é', "i": 3, "f": 0.850786, "b": True, "l": list(range(60)),
           "t": {"a": [1, 2], "b": {"c": "d"}}, "odd key": "x"}
    text = "\n".join(profile_toml.table("engine_args", doc))
    assert tomllib.loads(text)["engine_args"] == doc


def test_credentials_are_recognised_by_name_and_value():
    assert redact.is_secret_name("--api-key") and redact.is_secret_name("hf_token")
    assert redact.is_secret_name("ssl-keyfile-password") and redact.is_secret_name("admin-api-key")
    for harmless in ("max-num-batched-tokens", "skip-tokenizer-init", "num_speculative_tokens", "tokenizer-mode"):
        assert not redact.is_secret_name(harmless), harmless
    assert redact.is_secret_env("HF_TOKEN") and redact.is_secret_env("OPENAI_API_KEY")
    assert redact.is_secret_env("AWS_SECRET_ACCESS_KEY") and redact.is_secret_env("X", "hf_" + "a" * 30)
    assert not redact.is_secret_env("VLLM_CPU_KVCACHE_SPACE", "1") and not redact.is_secret_env("TOKENIZERS_PARALLELISM")
    text = "https://me:pw@host/x?token=abc&q=1 sk-" + "b" * 30
    clean = redact.scrub_text(text)
    assert "pw" not in clean and "abc" not in clean and "b" * 30 not in clean and "q=1" in clean
    value, changed = redact.scrub_value({"url": "s3://k:s@b/p", "api_key": "zzz", "n": 1})
    assert changed and value == {"url": "s3://<redacted>@b/p", "n": 1}


@pytest.mark.parametrize("argv, engine, rest", [
    (["vllm", "serve", "m", "-tp", "2"], "vllm", ["m", "-tp", "2"]),
    (["/opt/env/bin/sglang", "serve", "--model-path", "m"], "sglang", ["--model-path", "m"]),
    (["python3", "-m", "sglang.launch_server", "--model-path", "m"], "sglang", ["--model-path", "m"]),
    (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], "vllm", ["--model", "m"]),
    (["vllm serve m \\\n  --block-size 64"], "vllm", ["m", "--block-size", "64"]),
])
def test_split_command_forms(argv, engine, rest):
    env, got_engine, got_rest = split_command(argv)
    assert (got_engine, got_rest) == (engine, rest) and env == {}


def test_split_command_keeps_env_assignments():
    env, engine, rest = split_command(["env", "A=1", "B=x y", "vllm", "serve", "m"])
    assert env == {"A": "1", "B": "x y"} and engine == "vllm" and rest == ["m"]


def test_matrix_values_are_type_checked(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('engine = "vllm"\nmodel = "o/m"\n[matrix]\nmax_output = 4.5\n')
    with pytest.raises(UsageError, match=r"\[matrix\] max_output must be a whole number; got 4.5"):
        load_profile(f)
    f.write_text('engine = "vllm"\nmodel = "o/m"\n[matrix]\ncontexts = ["1K", 2048]\nwindow_s = 2\n')
    assert load_profile(f).matrix.contexts == (1024, 2048)
    json.dumps(load_profile(f).engine_args)  # results store engine_args as JSON


@pytest.mark.parametrize("text, anatomy", [('"on"', True), ('"off"', False)])
def test_matrix_anatomy_is_spelled_as_the_flag(tmp_path, text, anatomy):
    f = tmp_path / "p.toml"
    f.write_text(f'engine = "vllm"\nmodel = "o/m"\n[matrix]\nanatomy = {text}\n')
    assert load_profile(f).matrix.anatomy is anatomy


@pytest.mark.parametrize("text, shown", [("true", "true"), ("false", "false"), ('"yes"', "'yes'"), ("1", "1")])
def test_matrix_anatomy_other_spellings_name_the_valid_ones(tmp_path, text, shown):
    f = tmp_path / "p.toml"
    f.write_text(f'engine = "vllm"\nmodel = "o/m"\n[matrix]\nanatomy = {text}\n')
    with pytest.raises(UsageError, match=rf'\[matrix\] anatomy must be "on" or "off" \(as --anatomy\); got {shown}\.$'):
        load_profile(f)
