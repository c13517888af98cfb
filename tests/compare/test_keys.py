"""Comparability keys: what makes two runs not comparable, what does not, and --allow-different."""
from __future__ import annotations

from dataclasses import replace

import pytest

from inproc.compare.keys import KeyDiff, allowed, check_allow_keys, check_one_profile, differing, run_keys, split_allowed
from inproc.errors import UsageError
from inproc.record.io import load_results
from tests.conftest import FIXTURES

RUN1, RUN2, SEQS2 = (load_results(FIXTURES / "compare" / f"{n}.json") for n in ("run-1", "run-2", "seqs2"))


def test_nightly_runs_of_one_profile_are_comparable_whatever_their_seeds():
    assert RUN1.plan.seed != RUN2.plan.seed and RUN1.created != RUN2.created
    assert differing([RUN1], [RUN2]) == []
    keys = run_keys(RUN1)
    assert keys["engine.version"] == "0.32.0" and keys["gpu.model"] == "none" and keys["cpu.model"]
    assert keys["profile.engine_args.max-num-seqs"] == 8 and keys["plan.window_s"] == 1.0
    assert not any("seed" == k.split(".")[-1] and k.startswith("plan") for k in keys)


def test_each_difference_is_named_with_both_values():
    other = replace(RUN2, engine=replace(RUN2.engine, version="0.33.0"),
                    machine=replace(RUN2.machine, gpu={"driver_version": "570.00", "devices": [{"name": "NVIDIA H200"}]}),
                    profile=replace(RUN2.profile, env={**RUN2.profile.env, "VLLM_NEW": "1"}))
    diffs = {d.key: d for d in differing([RUN1], [other])}
    assert set(diffs) == {"engine.version", "gpu.model", "gpu.driver", "cpu.model", "profile.env.VLLM_NEW"}
    assert diffs["engine.version"] == KeyDiff("engine.version", ("0.32.0",), ("0.33.0",))
    assert diffs["gpu.model"].describe() == "gpu.model (none vs NVIDIA H200)"
    assert diffs["profile.env.VLLM_NEW"].describe() == "profile.env.VLLM_NEW ((unset) vs 1)"
    # A baseline whose runs hold two values shows both.
    mixed = {d.key: d for d in differing([RUN1, other], [RUN1])}
    assert mixed["engine.version"] == KeyDiff("engine.version", ("0.32.0", "0.33.0"), ("0.32.0",))
    assert mixed["engine.version"].describe() == "engine.version (0.32.0 | 0.33.0 vs 0.32.0)"


def test_allow_different_takes_a_key_or_a_prefix_at_a_dot():
    d = KeyDiff("profile.engine_args.max-num-seqs", ("8",), ("2",))
    assert allowed(d, ["profile.engine_args.max-num-seqs"]) and allowed(d, ["profile.engine_args"]) and allowed(d, ["profile"])
    assert not allowed(d, ["profile.engine_args.max-num"]) and not allowed(d, ["plan"])
    assert check_allow_keys(["plan", "gpu", "engine.version", "profile.env.FOO"]) == ("plan", "gpu", "engine.version", "profile.env.FOO")
    with pytest.raises(UsageError, match=r"Unknown --allow-different key 'engine\.versio'\. Keys: engine\.name, "):
        check_allow_keys(["engine.versio"])


def test_a_baseline_of_two_profiles_is_refused_unless_allowed():
    with pytest.raises(UsageError) as e:
        check_one_profile([RUN1, SEQS2], ["run-1.json", "seqs2.json"], (), "The baseline")
    msg = str(e.value)
    assert "\n" not in msg and "run-1.json and seqs2.json" in msg and "profile.engine_args.max-num-seqs (8 vs 2)" in msg
    assert "--allow-different profile.engine_args.max-num-seqs" in msg
    check_one_profile([RUN1, SEQS2], ["a", "b"], ("profile.engine_args",), "The baseline")  # allowed: no error


def test_a_window_of_steps_is_not_comparable_with_a_window_of_seconds():
    steps = replace(RUN2, plan=replace(RUN2.plan, settings=replace(RUN2.plan.settings, window_steps=40)))
    assert [d.describe() for d in differing([RUN1], [steps])] == ["plan.window_steps ((unset) vs 40)"]


def test_forced_acceptance_is_a_difference_to_allow_by_name_even_where_engine_arguments_may_move():
    from inproc.history.build import HISTORY_ALLOWS

    spec = lambda rec, forced: replace(  # noqa: E731 -- a speculative run, its acceptance natural or forced
        rec, engine=replace(rec.engine, settings=replace(rec.engine.settings, speculative_method="ngram")),
        profile=replace(rec.profile, acceptance=forced))
    natural, l2, l3 = spec(RUN1, None), spec(RUN2, {"length": 2.0}), spec(RUN2, {"length": 3.0})
    assert differing([natural], [spec(RUN2, None)]) == []
    # Would fail: the forced value kept only among the engine arguments (history allows those every night).
    for base, new, shown in ((natural, l2, "spec.acceptance (natural vs length 2)"),
                             (l2, l3, "spec.acceptance (length 2 vs length 3)")):
        diffs = differing([base], [new])
        assert [d.describe() for d in diffs] == [shown]
        assert split_allowed(diffs, HISTORY_ALLOWS)[1] == diffs  # history refuses it too
        assert split_allowed(diffs, ["spec.acceptance"])[1] == []
    assert "spec.acceptance" not in run_keys(RUN1)  # no speculation: no key
    assert check_allow_keys(["spec.acceptance"]) == ("spec.acceptance",)
