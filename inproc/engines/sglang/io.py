"""The two ends of SGLang's scheduler that a server wires to ZMQ, wired to this process.

SGLang's rank-0 scheduler reads requests from a ZMQ PULL socket (fed by the
TokenizerManager) and pushes outputs to the detokenizer or tokenizer. Here the caller
is the tokenizer: :class:`Inbox` takes the socket's place, so requests still enter
through the scheduler's own receive-and-broadcast (every TP rank sees the same inputs
in the same iteration), and :class:`OutputSink` takes the senders' place, turning
``BatchTokenIDOutput`` / ``AbortReq`` into :class:`~inproc.types.RequestDelta`.
"""
from __future__ import annotations

import itertools
import time
from array import array
from collections import deque
from dataclasses import dataclass, field

from inproc.types import RequestSpec


class Inbox:
    """Stands in for rank 0's ``recv_from_tokenizer`` socket: a FIFO read without blocking.

    It speaks the two halves of ``sock_send`` / ``sock_recv`` (pickle or msgpack,
    whichever SGLang's IPC uses) so requests are encoded exactly as the
    TokenizerManager would send them.
    """

    def __init__(self) -> None:
        self._frames: deque[object] = deque()

    def __len__(self) -> int:
        return len(self._frames)

    def send(self, data: bytes, flags: int = 0) -> None:
        self._frames.append(data)

    def send_pyobj(self, obj: object, flags: int = 0, protocol: int = -1) -> None:
        self._frames.append(obj)

    def _pop(self) -> object:
        if not self._frames:
            import zmq

            # The scheduler polls with NOBLOCK and stops at zmq.Again, as on a real socket.
            raise zmq.Again()
        return self._frames.popleft()

    def recv(self, flags: int = 0) -> object:
        return self._pop()

    def recv_pyobj(self, flags: int = 0) -> object:
        return self._pop()


def _finish_kind(reason: object) -> str | None:
    """``{"type": "length", ...}`` -> ``"length"``; SGLang's kinds: length, stop, abort."""
    if reason is None:
        return None
    if isinstance(reason, dict):
        return str(reason.get("type", "unknown"))
    return str(getattr(reason, "type", reason))


@dataclass
class _Gathered:
    """Tokens and state gathered for one request during one step."""

    new_token_ids: list[int] = field(default_factory=list)
    finished: bool = False
    finish_reason: str | None = None
    num_cached_tokens: int | None = None
    sglang_output_len: int | None = None  # SGLang's completion_tokens for the request so far


class OutputSink:
    """Replaces the scheduler's output senders; collects what one step emitted."""

    def __init__(self) -> None:
        self._gathered: dict[str, _Gathered] = {}
        self.control: list[object] = []  # replies to control requests (flush_cache...)
        self._started: set[str] = set()  # rids whose first output has been seen
        # Prompt tokens looked up in / served from the radix cache, counted once per
        # request at its first output (when its prefill is done).
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.generation_tokens = 0  # every output token the scheduler emitted
        self.convert_s = 0.0  # seconds inside send_output (the adapter's conversion) since the engine took it

    def send_output(self, output: object, recv_obj: object | None = None) -> None:
        """Same signature as SGLang's ``SenderWrapper.send_output``."""
        from sglang.srt.managers.io_struct import AbortReq, BatchTokenIDOutput

        t = time.perf_counter()
        if isinstance(output, BatchTokenIDOutput):
            self._take_batch(output)
        elif isinstance(output, AbortReq):
            p = self._gathered.setdefault(output.rid, _Gathered())
            p.finished, p.finish_reason = True, _finish_kind(output.finished_reason) or "abort"
        else:
            self.control.append(output)
        self.convert_s += time.perf_counter() - t

    def _take_batch(self, out) -> None:
        for i, rid in enumerate(out.rids):
            p = self._gathered.setdefault(rid, _Gathered())
            p.new_token_ids.extend(int(t) for t in out.output_ids[i])
            self.generation_tokens += len(out.output_ids[i])
            p.num_cached_tokens = int(out.cached_tokens[i])
            if rid not in self._started:
                self._started.add(rid)
                self.prefix_queries += int(out.prompt_tokens[i])
                self.prefix_hits += p.num_cached_tokens
            if out.completion_tokens:
                p.sglang_output_len = int(out.completion_tokens[i])
            reason = out.finished_reasons[i]
            if reason is not None:
                p.finished, p.finish_reason = True, _finish_kind(reason)
                self._started.discard(rid)

    def drain(self) -> dict[str, _Gathered]:
        """This step's outputs by SGLang rid; forgets them."""
        pending, self._gathered = self._gathered, {}
        return pending


class RidMap:
    """Driver request ids <-> SGLang rids.

    SGLang aborts every rid that *starts with* the one named (``r1`` would take ``r10``
    with it), so each rid gets a fixed-width serial prefix that no other rid shares.
    """

    def __init__(self) -> None:
        self._serial = itertools.count()
        self.to_driver: dict[str, str] = {}
        self.to_sglang: dict[str, str] = {}

    def add(self, request_id: str) -> str:
        rid = f"{next(self._serial):010d}:{request_id}"
        self.to_driver[rid] = request_id
        self.to_sglang[request_id] = rid
        return rid

    def forget(self, rid: str) -> None:
        self.to_sglang.pop(self.to_driver.pop(rid, None), None)


def make_generate_req(spec: RequestSpec, rid: str, vocab_size: int):
    """The ``TokenizedGenerateReqInput`` the TokenizerManager would build for these token ids."""
    from sglang.srt.managers.io_struct import TokenizedGenerateReqInput
    from sglang.srt.sampling.sampling_params import SamplingParams

    params = SamplingParams(
        max_new_tokens=spec.max_tokens,
        temperature=spec.temperature,
        ignore_eos=spec.ignore_eos,
        # Honoured by SGLang's sampler only with --enable-deterministic-inference.
        sampling_seed=spec.seed,
    )
    params.normalize(None)  # no tokenizer: token-id prompts, no stop strings
    params.verify(vocab_size)
    req = TokenizedGenerateReqInput(
        rid=rid,
        input_text=None,
        input_ids=array("q", spec.prompt_token_ids),
        input_embeds=None,
        mm_inputs=None,
        token_type_ids=None,
        sampling_params=params,
        return_logprob=False,
        logprob_start_len=-1,
        top_logprobs_num=0,
        token_ids_logprob=None,
        stream=True,
    )
    req.wrap_pickle_fields()  # as TokenizerManager does before sending
    return req
