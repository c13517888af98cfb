"""The one line of an engine that fails before anything is measured (``inproc.run.failure``)."""
from __future__ import annotations

import pytest

from inproc.errors import EngineFailed, UsageError
from inproc.run.failure import culprits, engine_stage, failure_line

SETS = ("speculative-config.rejection_sample_method=synthetic", "speculative-config.synthetic_acceptance_length=2.0")


def test_the_override_the_message_names_is_the_culprit_and_numbers_name_none():
    """Wrong code this fails: every override blamed, a key's words matched inside other words, or a bare number
    ("2.0", "0") taken as named by a message that happens to hold it."""
    assert culprits("Synthetic acceptance not supported with CPU sampling", SETS) == SETS[:1]
    assert culprits("num_blocks must be positive", ("num-blocks=0", "max-batch-tokens=64")) == ("num-blocks=0",)
    assert culprits("expected 2.0 got 0", ("a=2.0", "b=0")) == ()
    assert culprits("the blocksize is bad", ("block=4",)) == ()


def test_the_line_names_the_stage_the_engines_message_and_the_settings():
    line = failure_line("while it warmed up", RuntimeError("No requests\n  can be scheduled."), ("num-blocks=1",))
    assert line == ("The engine failed while it warmed up: RuntimeError: No requests can be scheduled. Settings given "
                    "with --set: num-blocks=1. Nothing was measured and no results file was written.")
    assert failure_line("while it was built", AssertionError(), ()) == (
        "The engine failed while it was built: AssertionError. Nothing was measured and no results file was written.")


def test_the_stage_turns_an_engines_exception_into_one_line_and_lets_a_usage_error_through():
    with pytest.raises(EngineFailed, match=r"^The engine failed in its first measured entry: KeyError: 'x'\."):
        with engine_stage("in its first measured entry"):
            raise KeyError("x")
    with pytest.raises(UsageError, match=r"^bad$") as caught:
        with engine_stage("while it warmed up"):
            raise UsageError("bad")
    assert type(caught.value) is UsageError
