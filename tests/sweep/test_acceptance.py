"""A where-speculation-pays sweep's variants and its refusals (one line, exit 2, no folder), and its report.

Wrong code each test catches: the variant without speculation keeping the speculation argument
(its profile would still speculate), a forced length not passed to the child, a length below 1
or given twice accepted, the analysis run on a profile that does not speculate.
"""
from __future__ import annotations

import json

import pytest

from inproc import engines
from inproc.profiles.spec import load_with_overrides
from inproc.sweep.acceptance import no_speculation, parse_acceptance, speculation_variants
from inproc.sweep.manifest import from_json, to_json, Sweep, SweepPlan, VariantRun
from inproc.sweep.pays import NO_SPECULATION
from inproc.sweep.plan import parse_varies, plan_variants
from inproc.sweep.run import child_argv
from tests.conftest import DEFAULT_PROFILE
from tests.spawn import run_main

NGRAM = DEFAULT_PROFILE.parent / "cpu-vllm-tiny-llama-ngram.toml"


def _variants(acceptance=(), varies=()):
    profile = load_with_overrides(NGRAM)
    adapter = engines.get(profile.engine)
    base = no_speculation(adapter.speculation_keys(profile.engine_args), adapter.label, str(NGRAM))
    return profile, speculation_variants(base, acceptance, plan_variants(parse_varies(varies)) if varies else ())


def test_the_variant_without_speculation_drops_the_speculation_argument_and_the_others_keep_it():
    profile, variants = _variants(("1.5", "2.5"), ("max-num-seqs=4,8",))
    assert [v.name for v in variants] == [NO_SPECULATION, "acceptance=1.5 max-num-seqs=4", "acceptance=1.5 max-num-seqs=8",
                                          "acceptance=2.5 max-num-seqs=4", "acceptance=2.5 max-num-seqs=8"]
    assert "speculative-config" in profile.engine_args
    assert "speculative-config" not in profile.with_overrides(variants[0].sets).engine_args
    assert profile.with_overrides(variants[0].sets).engine_args["max-num-seqs"] == 8  # the rest is the profile's
    assert all(profile.with_overrides(v.sets).engine_args["speculative-config"] for v in variants[1:])
    assert [v.index for v in variants] == [1, 2, 3, 4, 5] and len({v.file for v in variants}) == 5


def test_removing_speculation_also_drops_a_forced_acceptance(tmp_path):
    forced = tmp_path / "forced.toml"
    forced.write_text(NGRAM.read_text().replace('"models/', f'"{NGRAM.parent}/models/') + "\n[speculative]\nacceptance = 2.5\n")
    profile = load_with_overrides(forced)
    assert profile.acceptance is not None and profile.acceptance.mean_length == 2.5
    plain = profile.with_overrides(("!speculative-config",))
    assert plain.acceptance is None and "speculative-config" not in plain.engine_args
    plain.launch  # noqa: B018 - no refusal: nothing is forced on a profile that no longer speculates
    assert profile.with_overrides(("max-num-seqs=4",)).acceptance == profile.acceptance


def test_a_forced_length_reaches_the_childs_command_and_survives_sweep_json(tmp_path):
    _, variants = _variants(("2",))
    plan = SweepPlan(str(NGRAM), "p", "vllm", (), False, ("--no-prefill",), 1, acceptance=("2",), break_even=True, at=2.5)
    sweep = Sweep(plan, tuple(VariantRun(v) for v in variants), "inproc sweep", "now")
    argv = child_argv(sweep, sweep.runs[1], tmp_path, resume=False)
    assert argv[argv.index("--acceptance") + 1] == "2"
    assert "--acceptance" not in child_argv(sweep, sweep.runs[0], tmp_path, resume=False)
    assert "!speculative-config" in child_argv(sweep, sweep.runs[0], tmp_path, resume=False)
    again = from_json(json.loads(json.dumps(to_json(sweep))))
    assert again == sweep


@pytest.mark.parametrize("text,needle", [("0.5", "Bad --acceptance value '0.5'"), ("2,x", "Bad --acceptance value 'x'"),
                                         ("2,2.0", "given twice"), ("2,,3", "an empty value")])
def test_bad_lengths_are_refused(text, needle):
    from inproc.errors import UsageError

    with pytest.raises(UsageError, match=needle):
        parse_acceptance(text)
    assert parse_acceptance("1.5, 2,4") == ("1.5", "2", "4")


@pytest.mark.parametrize("profile,args,needle", [
    (DEFAULT_PROFILE, ["--acceptance", "2"], "does not use speculative decoding"),
    (NGRAM, ["--break-even"], "--break-even needs speculative variants"),
    (NGRAM, ["--acceptance", "0.9"], "Bad --acceptance value '0.9'"),
    (NGRAM, ["--acceptance", "2", "--at", "0.5"], "Bad --at 0.5"),
    (NGRAM, ["--vary", "max-num-seqs=4,8", "--at", "2"], "--at 2 reads the speedup"),
    (NGRAM, ["--acceptance", "2", "--graph-sizes", "[1,2]"], "two sweeps"),
    (NGRAM, ["--acceptance", "2,9"], "9"),  # above k + 1 = 4: refused here, as each child would
])
def test_refusals_are_one_line_exit_2_and_make_no_folder(profile, args, needle, tmp_path, capfd):
    out = tmp_path / "sweep"
    p = run_main(capfd, "sweep", str(profile), *args, "--cells", "256x1", "--out", str(out))
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and needle in lines[0], p.stderr
    assert not out.exists()
