"""Forced acceptance as an input: its parsing, its checks against a profile's drafts, each engine's form, and its key in compare."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from inproc.errors import UsageError
from inproc.plan.acceptance import Acceptance, flag_args, from_flags, parse_length, parse_rates
from inproc.profiles.spec import load_profile, load_with_overrides
from tests.spawn import run_main

PROFILES = Path(__file__).resolve().parents[2] / "launch_profiles"
NGRAM = PROFILES / "cpu-vllm-tiny-llama-ngram.toml"  # vLLM n-gram, 3 draft tokens


def test_mean_length_of_rates_is_one_plus_their_sum():
    # Unconditional rates: the expected accepted drafts is their sum; the bonus token adds one.
    assert Acceptance(rates=(0.9, 0.6, 0.3)).mean_length == pytest.approx(2.8)
    assert Acceptance(length=2.5).mean_length == 2.5


@pytest.mark.parametrize("flag, value, words", [
    ("--acceptance", "0.5", "at least 1"),
    ("--acceptance", "nan", "at least 1"),
    ("--acceptance", "two", "'two'"),
    ("--acceptance-rates", "0.5,0.7,0.2", "cannot rise; position 2 (0.7) is above position 1 (0.5)"),
    ("--acceptance-rates", "0.9,1.2,0.1", "1.2 is not"),
    ("--acceptance-rates", "0.9,,0.1", "'0.9,,0.1'"),
])
def test_bad_values_are_one_line_naming_the_value(flag, value, words):
    with pytest.raises(UsageError) as e:
        (parse_length if flag == "--acceptance" else parse_rates)(value)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_flags_give_the_same_acceptance_back():
    # A child (bisect) or a reproduce command gets these flags: they must parse to the very same value.
    for forced in (Acceptance(length=2.123456789), Acceptance(rates=(0.95, 0.333333333, 0.1))):
        flag, value = flag_args(forced)
        assert from_flags(value if flag == "--acceptance" else None, value if flag == "--acceptance-rates" else None) == forced
    assert flag_args(None) == []


def test_vllm_profile_gets_the_synthetic_fields_and_keeps_its_own():
    launch = load_with_overrides(NGRAM, (), Acceptance(length=2.5)).launch
    spec = launch.engine_args["speculative-config"]
    assert spec["rejection_sample_method"] == "synthetic" and spec["synthetic_acceptance_length"] == 2.5
    assert spec["method"] == "ngram" and spec["num_speculative_tokens"] == 3
    rates = load_with_overrides(NGRAM, (), Acceptance(rates=(0.9, 0.5, 0.1))).launch.engine_args["speculative-config"]
    assert rates["synthetic_acceptance_rates"] == [0.9, 0.5, 0.1] and "synthetic_acceptance_length" not in rates
    # The profile's own engine arguments stay as written (the record's, compare's): the forced value is its own key.
    assert "rejection_sample_method" not in load_with_overrides(NGRAM, (), Acceptance(length=2.5)).engine_args["speculative-config"]


def test_sglang_profile_gets_the_simulate_variables(tmp_path):
    p = tmp_path / "eagle.toml"
    p.write_text((PROFILES / "cpu-sglang-tiny-llama.toml").read_text().replace(
        "[env]", "speculative-algorithm = \"EAGLE\"\nspeculative-num-steps = 3\n\n[env]"))
    env = load_with_overrides(p, (), Acceptance(length=2.5)).launch.env
    assert env["SGLANG_SIMULATE_ACC_LEN"] == "2.5" and env["SGLANG_SIMULATE_ACC_METHOD"] == "match-expected"
    assert env["SGLANG_SIMULATE_ACC_TOKEN_MODE"] == "real-draft-token"
    assert env["SGLANG_USE_CPU_ENGINE"] == "1"  # the profile's own environment kept
    with pytest.raises(UsageError, match="SGLang forces a mean acceptance length only"):
        load_with_overrides(p, (), Acceptance(rates=(0.9, 0.5, 0.1)))
    with pytest.raises(UsageError, match=r"in \[1, 4\]"):
        load_with_overrides(p, (), Acceptance(length=4.5))


def test_profile_speculative_table(tmp_path):
    text = NGRAM.read_text()
    good = tmp_path / "forced.toml"
    good.write_text(text + "\n[speculative]\nacceptance = [0.9, 0.5, 0.25]\n")
    assert load_profile(good).acceptance == Acceptance(rates=(0.9, 0.5, 0.25))
    flag = load_with_overrides(good, (), Acceptance(length=3.0))  # the flag replaces the profile's own
    assert flag.acceptance == Acceptance(length=3.0)
    assert flag.launch.engine_args["speculative-config"]["synthetic_acceptance_length"] == 3.0
    for body, words in (("acceptance = \"high\"", "got 'high'"), ("acceptance = 5.0", "in [1, 4]"),
                        ("length = 2", "holds one key, acceptance")):
        bad = tmp_path / "bad.toml"
        bad.write_text(text + f"\n[speculative]\n{body}\n")
        with pytest.raises(UsageError) as e:
            load_with_overrides(bad)
        assert words in str(e.value), str(e.value)


@pytest.mark.parametrize("profile, args, words", [
    ("cpu-vllm-tiny-llama-ngram.toml", ["--acceptance", "4.5"], "with 3 draft tokens"),
    ("cpu-vllm-tiny-llama-ngram.toml", ["--acceptance-rates", "0.9,0.5"], "2 rates for 3 draft tokens"),
    ("cpu-vllm-tiny-llama-ngram.toml", ["--acceptance", "2", "--acceptance-rates", "0.5,0.5,0.5"], "not both"),
    ("cpu-vllm-tiny-llama.toml", ["--acceptance", "2"], "this profile does not speculate"),
    ("cpu-sglang-tiny-llama.toml", ["--acceptance", "2"], "this profile does not speculate"),
    ("cpu-transformers-tiny-llama.toml", ["--acceptance", "2"], "transformers has no way to force draft acceptance"),
])
@pytest.mark.parametrize("command", ["run", "cell", "bisect"])
def test_cli_refuses_in_one_line_before_building(capfd, command, profile, args, words):
    extra = {"run": [], "cell": ["--context", "256", "--concurrency", "1"],
             "bisect": ["--cell", "256x1", "--good", "a", "--bad", "b"]}[command]
    r = run_main(capfd, command, str(PROFILES / profile), *extra, *args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], r.stderr
