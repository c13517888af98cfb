"""The sampler's answers read line by line from one buffer (``inproc.telemetry.replies``), from real child
processes writing to a real pipe: two lines in one write, a line that is no answer, a garbled answer, the end.

The wrong code these fail: ``select`` on the pipe then a buffered ``readline`` (the second of two lines written
together stays in the file's buffer, ``select`` sees nothing more, and the answer is missed), ``json.loads`` on
every line (a line that is no answer raises), waiting out the timeout on a garbled answer.
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from inproc.telemetry.replies import STARTED, Replies

#: The child writes its argument's bytes in ONE os.write, then stays alive until its stdin closes (a live
#: sampler that has nothing more to say).
CHILD = "import os, sys; os.write(1, sys.argv[1].encode()); sys.stdin.read()"


@pytest.fixture
def child():
    procs = []

    def start(text: str, stay: bool = True) -> Replies:
        code = CHILD if stay else CHILD.replace("; sys.stdin.read()", "")
        p = subprocess.Popen([sys.executable, "-c", code, text], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        procs.append(p)
        return Replies(p.stdout.fileno())

    yield start
    for p in procs:
        p.stdin.close()
        p.wait(timeout=30)
        p.stdout.close()


def test_two_answers_written_together_are_both_read_and_the_writer_is_not_taken_for_ended(child):
    replies = child('started\n{"gpus": [], "missed_ticks": 0}\n')
    assert replies.answer(30.0, STARTED) == STARTED
    assert replies.answer(30.0, "gpus") == {"gpus": [], "missed_ticks": 0}
    assert replies.stray == [] and not replies.ended


def test_a_late_answer_is_skipped_and_a_line_that_is_no_answer_is_kept_for_the_note(child):
    replies = child('{"gpus": [1]}\nNVML: banner\nstarted\n[1, 2]\n{"ready": true, "gpus": []}\n')
    assert replies.answer(30.0, STARTED) == STARTED  # the JSON before it answered an earlier stop
    assert replies.answer(30.0, "ready") == {"ready": True, "gpus": []}
    assert replies.stray == ["NVML: banner", "[1, 2]"]
    assert replies.stray_note() == "sampler wrote 2 lines that are no answer (first: 'NVML: banner')"
    assert replies.stray == [] and replies.stray_note() == ""


@pytest.mark.parametrize("garbled", ['{"gpus": [0, 1', '{"reason": "no gpus key"}'])
def test_a_garbled_answer_is_none_at_once_and_noted_not_raised(child, garbled):
    replies = child(garbled + "\n")
    t0 = time.monotonic()
    assert replies.answer(60.0, "gpus") is None
    assert time.monotonic() - t0 < 30.0  # at once, not at the timeout: the answer came, wrong
    assert replies.stray == [garbled] and not replies.ended


def test_the_end_of_the_pipe_ends_the_wait_and_a_last_line_without_its_end_is_read(child):
    replies = child("started", stay=False)
    assert replies.line(time.monotonic() + 30.0) == STARTED
    t0 = time.monotonic()
    assert replies.answer(60.0, "gpus") is None and replies.ended
    assert time.monotonic() - t0 < 30.0


def test_silence_is_none_when_the_deadline_passes(child):
    replies = child("")
    assert replies.answer(0.2, STARTED) is None and not replies.ended and replies.stray == []
