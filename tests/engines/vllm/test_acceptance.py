"""A forced acceptance as inproc hands it to vLLM, checked against vLLM's own SpeculativeConfig
(built and resolved by ``create_engine_config``, no engine, no step)."""
from __future__ import annotations

from pathlib import Path

import pytest

from inproc.plan.acceptance import Acceptance
from inproc.profiles.spec import load_profile
from tests.conftest import needs_vllm

pytestmark = needs_vllm

NGRAM = Path(__file__).resolve().parents[3] / "launch_profiles" / "cpu-vllm-tiny-llama-ngram.toml"  # 3 draft tokens


def _resolved(acceptance: Acceptance):
    """vLLM's SpeculativeConfig of the n-gram profile with ``acceptance`` forced, as vLLM resolved it."""
    from inproc.engines.vllm.args import parse_profile

    launch = load_profile(NGRAM).with_acceptance(acceptance).launch
    return parse_profile(launch.model, dict(launch.engine_args)).create_engine_config().speculative_config


@pytest.mark.parametrize("forced, rates", [
    # vLLM's minimum-variance schedule for a mean length: whole positions at 1, the rest at the fraction.
    (Acceptance(length=2.5), [1.0, 0.5, 0.0]),
    (Acceptance(length=1.0), [0.0, 0.0, 0.0]),
    (Acceptance(rates=(0.9, 0.6, 0.3)), [0.9, 0.6, 0.3]),
])
def test_vllm_resolves_the_forced_acceptance_to_its_per_position_rates(forced, rates):
    # Would fail: the length handed as accepted drafts (L - 1) or under another key, rates reordered,
    # or the method left "standard" (vLLM would then refuse the synthetic fields at this very call).
    spec = _resolved(forced)
    assert spec.rejection_sample_method == "synthetic"
    assert spec.synthetic_acceptance_rates == pytest.approx(rates)
    # The mean length inproc records for the cell is the one vLLM will force: 1 + the unconditional rates.
    assert 1 + sum(spec.synthetic_acceptance_rates) == pytest.approx(forced.mean_length)
