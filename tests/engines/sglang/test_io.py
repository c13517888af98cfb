"""The in-process ends of the scheduler's sockets, with SGLang's own message types."""
from __future__ import annotations

import pytest

from inproc.types import RequestSpec
from tests.conftest import needs_sglang

pytestmark = needs_sglang


def test_inbox_carries_requests_as_the_tokenizer_sends_them():
    import zmq
    from sglang.srt.managers.io_struct import TokenizedGenerateReqInput, sock_recv, sock_send

    from inproc.engines.sglang.io import Inbox, make_generate_req

    inbox = Inbox()
    sock_send(inbox, make_generate_req(RequestSpec("r", [5, 6, 7], 4, temperature=0.0, seed=3), "0:r", 32000))
    got = sock_recv(inbox, zmq.NOBLOCK)
    assert isinstance(got, TokenizedGenerateReqInput) and got.rid == "0:r" and got.stream
    assert list(got.input_ids) == [5, 6, 7]
    assert (got.sampling_params.max_new_tokens, got.sampling_params.ignore_eos) == (4, True)
    assert got.sampling_params.sampling_seed == 3
    with pytest.raises(zmq.Again):  # empty: what the scheduler's NOBLOCK poll stops at
        sock_recv(inbox, zmq.NOBLOCK)


def test_bad_sampling_is_refused_as_the_tokenizer_refuses_it():
    from inproc.engines.sglang.io import make_generate_req

    with pytest.raises(ValueError, match=r"temperature must be a non-negative finite number, got -1\.0"):
        make_generate_req(RequestSpec("r", [1], 4, temperature=-1.0), "0:r", 32000)
    make_generate_req(RequestSpec("r", [1], 4, temperature=0.0), "0:r", 32000)  # the boundary passes


def test_rids_never_prefix_one_another():
    from inproc.engines.sglang.io import RidMap

    # SGLang aborts every rid that starts with the one named.
    rids = RidMap()
    r1, r10 = rids.add("r1"), rids.add("r10")
    assert not r10.startswith(r1) and not r1.startswith(r10)
    assert rids.to_driver[r10] == "r10"
    rids.forget(r1)
    assert "r1" not in rids.to_sglang and r1 not in rids.to_driver


def test_sink_turns_aborts_and_control_replies_apart():
    from sglang.srt.managers.io_struct import AbortReq, FlushCacheReqOutput

    from inproc.engines.sglang.io import OutputSink

    sink = OutputSink()
    sink.send_output(AbortReq(rid="0:r", finished_reason={"type": "abort", "message": "x"}))
    sink.send_output(FlushCacheReqOutput(success=True))
    pending = sink.drain()
    assert pending["0:r"].finished and pending["0:r"].finish_reason == "abort"
    assert pending["0:r"].new_token_ids == []
    assert [type(c).__name__ for c in sink.control] == ["FlushCacheReqOutput"]
    assert sink.drain() == {}
