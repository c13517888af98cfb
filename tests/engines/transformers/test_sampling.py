"""transformers' sampler, EOS and queues as the engine holds them: the greedy session engine (temperature 0) beside
one sampling at temperature 1.0, both on the tiny Llama's dummy weights."""
from __future__ import annotations

import dataclasses

import pytest

from inproc import engines
from inproc.errors import UsageError
from inproc.plan.prompts import PromptFactory
from inproc.selftest.checks import step_all
from inproc.types import RequestSpec
from tests.conftest import DEFAULT_PROFILES, needs_transformers

pytestmark = [needs_transformers, pytest.mark.engine]


@pytest.fixture(scope="module")
def sampled_engine():
    from inproc.profiles.spec import load_profile

    launch = load_profile(DEFAULT_PROFILES["transformers"]).launch
    # A small token budget (48 per step) splits prompts over steps, and the prefill-first scheduler gives a split
    # prefill the budget before the decoding requests: its batches leave active requests out.
    launch = dataclasses.replace(launch, temperature=1.0, engine_args={**launch.engine_args, "max-batch-tokens": 48,
                                                                       "scheduler-type": "prefill_first"})
    engine = engines.build_engine(launch)
    yield engine
    engine.shutdown()


def _tokens(engine, prompts: list[list[int]], n: int, temperature: float, tag: str, ignore_eos: bool = True):
    """{request index: (tokens, finish reason)} for ``prompts`` run to completion together."""
    reqs = [RequestSpec(f"{tag}-{i}", p, n, temperature, ignore_eos=ignore_eos) for i, p in enumerate(prompts)]
    out = {r.request_id: ([], None) for r in reqs}
    for res in step_all(engine, reqs):
        for d in res.deltas:
            out[d.request_id][0].extend(d.new_token_ids)
            if d.finished:
                out[d.request_id] = (out[d.request_id][0], d.finish_reason)
    return [out[r.request_id] for r in reqs]


PROMPTS = PromptFactory(32000, 11, ())


def test_temperature_0_is_the_engines_greedy_choice_and_1_samples(transformers_engine, sampled_engine):
    """Wrong code this fails: the temperature dropped on the way to the engine (every engine sampling at 1.0: the two
    greedy runs of one prompt differ) or greedy everywhere (the sampled run equals the greedy one)."""
    prompt = PROMPTS.tokens(24, "greedy")
    first, again = _tokens(transformers_engine, [prompt, prompt], 24, 0.0, "g")
    (sampled, _), = _tokens(sampled_engine, [prompt], 24, 1.0, "s")
    assert first[0] == again[0] and len(first[0]) == 24
    assert sampled != first[0]
    assert transformers_engine.info.settings.shown["sampling"].startswith("greedy (do_sample off), EOS 2 ")
    assert sampled_engine.info.settings.shown["sampling"].startswith("sampled at temperature 1, top-k off, top-p off")


def test_a_temperature_or_seed_the_engine_cannot_give_is_refused(transformers_engine):
    with pytest.raises(UsageError, match=r"built with \(0\); request 'x' asks 0\.7\."):
        transformers_engine.add_request(RequestSpec("x", [1, 2, 3], 4, 0.7))
    with pytest.raises(UsageError, match=r"takes no seed per request"):
        transformers_engine.add_request(RequestSpec("y", [1, 2, 3], 4, 0.0, seed=5))
    assert not transformers_engine.has_unfinished()


def test_a_request_that_stops_at_eos_ends_there_with_the_engines_reason(transformers_engine):
    """A forced EOS id: the greedy run's 6th token made the engine's EOS. Wrong code this fails: EOS never passed to
    the engine (the request runs its 24 tokens), or every finish reason "length"."""
    prompt = PROMPTS.tokens(24, "eos")
    (full, reason), = _tokens(transformers_engine, [prompt], 24, 0.0, "full")
    assert reason == "length" and len(full) == 24
    gen = transformers_engine._manager.generation_config
    saved, gen.eos_token_id = gen.eos_token_id, full[5]
    try:
        (stopped, why), = _tokens(transformers_engine, [prompt], 24, 0.0, "stop", ignore_eos=False)
        (ignored, why_not), = _tokens(transformers_engine, [prompt], 24, 0.0, "ign", ignore_eos=True)
    finally:
        gen.eos_token_id = saved
    cut = full.index(full[5]) + 1
    assert (stopped, why) == (full[:cut], "stop")
    assert (ignored, why_not) == (full, "length")


def test_running_and_waiting_are_the_schedulers_sets(sampled_engine):
    """Six 100-token prompts on a 48-token budget: prefills split over steps, and a step whose budget a split
    prefill takes leaves the decoding requests out of its batch. At every step running + waiting is every
    request not finished yet. Wrong code this fails: running read as the batch's size (those left out are counted
    neither running nor waiting)."""
    reqs = [RequestSpec(f"q-{i}", PROMPTS.tokens(100, "q", i), 4, 1.0) for i in range(6)]
    for r in reqs:
        sampled_engine.add_request(r)
    unfinished, left_out = len(reqs), 0
    while sampled_engine.has_unfinished():
        res = sampled_engine.step()
        assert res.num_running + res.num_waiting == unfinished
        if res.batch is not None:
            left_out = max(left_out, res.num_running - res.batch.num_prefill_reqs - res.batch.num_decode_reqs)
        unfinished -= sum(d.finished for d in res.deltas)
    assert unfinished == 0 and left_out > 0
