"""SGLang's real scheduler, stepped in this process: tokens, caches, queues, capacity, threads.

Every test uses the one session engine (tests/conftest.py). The shutdown test ends
that engine, so it is marked to run after every other test of the session.
"""
from __future__ import annotations

import os
import threading

import psutil
import pytest

from inproc.types import RequestSpec
from tests.engines.sglang.conftest import PROFILE, live, needs_sglang, run_until_idle

pytestmark = needs_sglang

PROMPT = list(range(100, 164))  # 64 token ids, none special (the model's are 1 and 2)


def _scheduler(engine):
    return engine._sched


def _tokens_by_request(results) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for res in results:
        for d in res.deltas:
            out.setdefault(d.request_id, []).extend(d.new_token_ids)
    return out


def test_capacity_is_the_schedulers_own_accounting(idle_engine):
    import sglang

    s, info = _scheduler(idle_engine), idle_engine.info
    cap = info.capacity
    assert cap.kv_tokens == s.max_total_num_tokens == 6144  # the profile's max-total-tokens
    assert cap.block_size == s.page_size == 1
    assert cap.num_blocks == s.max_total_num_tokens // s.page_size
    assert cap.max_num_seqs == s.max_running_requests == 8
    assert cap.max_num_batched_tokens == s.chunked_prefill_size == 2048
    assert cap.max_model_len == s.model_config.context_len == 6144
    assert cap.engine_max_concurrency == pytest.approx(s.max_total_num_tokens / s.model_config.context_len)
    assert [(g.kind, g.num_layers) for g in cap.groups] == [("token_pool", 2)]
    # Read at build time, when the pool was empty.
    assert cap.extra["kv_available_tokens"] == s.max_total_num_tokens
    assert cap.extra["radix_evictable_tokens"] == 0
    assert info.version == sglang.__version__
    assert info.dummy_weights is True
    assert info.vocab_size == 32000 and info.special_token_ids == (1, 2)
    assert info.settings.tensor_parallel_size == 1 and info.settings.shown["attention_backend"] == "torch_native"
    # Graphs are off on the CPU: SGLang reports 0 GiB of graph memory, recorded as none captured.
    assert s.tp_worker.graph_memory_usage.get("decode") == 0 and info.settings.graph_capture_memory_bytes is None


def test_token_accounting_is_exact(idle_engine):
    lengths = {"acct-a": 5, "acct-b": 9, "acct-c": 17}
    before = idle_engine.counters().generation_tokens
    for rid, n in lengths.items():
        idle_engine.add_request(RequestSpec(rid, PROMPT, n))
    results = run_until_idle(idle_engine)
    tokens = _tokens_by_request(results)
    finished = {d.request_id: d.finish_reason for r in results for d in r.deltas if d.finished}
    assert {rid: len(t) for rid, t in tokens.items()} == lengths
    # SGLang's own count of each request's output, as it reported it when finishing.
    assert {rid: idle_engine.output_lengths[rid] for rid in lengths} == lengths
    assert finished == dict.fromkeys(lengths, "length")
    assert idle_engine.counters().generation_tokens - before == sum(lengths.values())
    # No speculative decoding: one token per running request per step.
    assert all(len(d.new_token_ids) == 1 for r in results for d in r.deltas)


def test_cold_prefill_then_prefix_hit(idle_engine):
    prompt = list(range(300, 428))
    idle_engine.add_request(RequestSpec("cold", prompt, 2))
    cold = [d for r in run_until_idle(idle_engine) for d in r.deltas]
    idle_engine.add_request(RequestSpec("warm", prompt, 2))
    warm = [d for r in run_until_idle(idle_engine) for d in r.deltas]
    assert cold[0].num_cached_tokens == 0
    # The same prompt again is served from the radix cache (all but the token that
    # must be computed to sample from): the check above can fail.
    assert 0 < warm[0].num_cached_tokens < len(prompt)
    assert idle_engine.reset_prefix_cache()
    idle_engine.add_request(RequestSpec("cold-again", prompt, 2))
    again = [d for r in run_until_idle(idle_engine) for d in r.deltas]
    assert again[0].num_cached_tokens == 0


def test_reset_prefix_cache_refused_while_requests_run(idle_engine):
    idle_engine.add_request(RequestSpec("busy", PROMPT, 4))
    idle_engine.step()
    assert idle_engine.reset_prefix_cache() is False
    run_until_idle(idle_engine)
    assert idle_engine.reset_prefix_cache() is True


def test_requests_queue_beyond_max_running_requests(idle_engine):
    max_running = idle_engine.info.capacity.max_num_seqs
    n = max_running + 4
    for i in range(n):
        idle_engine.add_request(RequestSpec(f"q{i}", [50 + i, *PROMPT], 6))
    results = run_until_idle(idle_engine)
    running = [r.num_running for r in results]
    assert max(running) == max_running, running
    assert results[0].num_waiting == n - max_running  # admitted 8 at the first step, 4 wait
    # Requests wait only while the batch is full, or in the one iteration after requests
    # finish: the overlap loop holds their KV until their last token is processed.
    for prev, r in zip(results, results[1:]):
        if r.num_waiting and r.num_running < max_running:
            assert prev.num_running == max_running, running
    assert len(_tokens_by_request(results)) == n
    # The first step is the prefill of the 8 admitted prompts (65 tokens each).
    assert results[0].num_scheduled_tokens == max_running * (len(PROMPT) + 1)


def test_forward_runs_in_the_calling_thread(idle_engine):
    model = _scheduler(idle_engine).tp_worker.model_runner.model
    layer = model.model.layers[0]
    seen: list[int] = []
    handle = layer.register_forward_hook(lambda *_: seen.append(threading.get_ident()))
    try:
        idle_engine.add_request(RequestSpec("thread", PROMPT, 3))
        run_until_idle(idle_engine)
    finally:
        handle.remove()
    assert len(seen) == 3  # one prefill + two decode forwards
    assert set(seen) == {threading.get_ident()}


def test_abort_drops_waiting_and_running_requests(idle_engine):
    idle_engine.add_request(RequestSpec("keep", PROMPT, 8))
    idle_engine.add_request(RequestSpec("drop", [7, *PROMPT], 8))
    idle_engine.add_request(RequestSpec("never", [8, *PROMPT], 8))
    idle_engine.abort(["never"])  # still in SGLang's waiting queue when the abort lands
    first = [idle_engine.step()]
    assert first[0].num_running == 2
    if first[0].returned_lag < 0:  # the overlap loop returns the prefill's tokens one iteration later
        first.append(idle_engine.step())
    assert {d.request_id for d in first[-1].deltas} == {"keep", "drop"}
    idle_engine.abort(["drop"])
    assert idle_engine.has_unfinished()
    rest = run_until_idle(idle_engine)
    tokens = _tokens_by_request(first + rest)
    assert "never" not in tokens and len(tokens["drop"]) <= len(first)  # nothing after the abort
    assert len(tokens["keep"]) == 8
    # SGLang marks a running request aborted and drops it after one more forward.
    assert max(r.num_running for r in rest[1:]) == 1


def test_step_anatomy_is_inproc_estimate_on_the_overlap_loop(idle_engine):
    """SGLang runs its overlap loop by default; each batch's shape and estimated bytes are filed under it."""
    import json

    import numpy as np

    from inproc.measure import metrics as m
    from inproc.plan.prompts import CellPrompts, PromptFactory
    from inproc.run.driver import DecodeSettings, Driver

    info = idle_engine.info
    assert info.settings.event_loop == "overlap" and info.forward_source.startswith("inproc's estimate")
    prompts = PromptFactory(info.vocab_size, 5, info.special_token_ids)
    trace = Driver(idle_engine).decode_cell(CellPrompts(prompts, 256, 2, "distinct", 16), DecodeSettings(2, 0.5, 400))
    s, w = trace.steps, m.window(trace)
    rows = np.arange(w.first_step, w.last_step + 1)
    assert (s.output_of[rows] == rows - 1).all()  # each step returns the previous step's batch
    assert (s.num_decode_reqs[rows] == 2).all() and (s.num_decode_tokens[rows] == 2).all()
    # The estimate's inputs, worked out from the model's config.json: K and V, 2 layers,
    # 2 KV heads of 64, bf16 = 1,024 bytes a token; weights as loaded.
    cfg = json.loads((PROFILE.parent / "models" / "tiny-llama" / "config.json").read_text())
    kv_per_token = 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    cost = idle_engine._loop.cost
    assert cost.kv_bytes_per_token == kv_per_token
    model = idle_engine._sched.tp_worker.model_runner.model
    assert cost.weight_bytes == sum(p.numel() * p.element_size() for p in model.parameters())
    # Each decode batch reads the weights once and every context token's KV; both contexts grow by 1.
    assert (np.diff(s.read_bytes[rows]) == 2 * kv_per_token).all()
    assert (s.write_bytes[rows] == 2 * kv_per_token).all()
    assert (s.read_bytes[rows] > cost.weight_bytes).all() and (s.schedule_s[rows] > 0).all()


@pytest.mark.ends_session_engine
def test_shutdown_leaves_nothing(sglang_engine, sglang_tmpdir):
    live(sglang_engine)  # nothing else shuts the session engine down
    from sglang.srt.managers.load_snapshot import shm_path_for

    port_args = sglang_engine._launched.port_args
    ipc_files = [n.removeprefix("ipc://") for n in (port_args.scheduler_input_ipc_name, port_args.tokenizer_ipc_name)]
    shm = shm_path_for(port_args.instance_id)
    # The files this engine made exist while it runs, so the checks below can fail.
    assert all(os.path.exists(p) for p in ipc_files) and os.path.exists(shm)
    assert all(os.path.dirname(p) == str(sglang_tmpdir) for p in ipc_files)
    sglang_engine.shutdown()
    assert sorted(os.listdir(sglang_tmpdir)) == []
    assert not os.path.exists(shm)
    assert [f for f in os.listdir("/dev/shm") if port_args.instance_id in f] == []
    assert psutil.Process().children(recursive=True) == []
    sglang_engine.shutdown()  # a second call is a no-op
