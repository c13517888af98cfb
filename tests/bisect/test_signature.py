"""The signature's kernel category: held between the regression and a candidate where both name one."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from inproc.bisect.signature import Signature, signature
from tests.history.test_diagnose import anatomy
from tests.sim.kernels import PassSettings, simulate_runs


def runs(n: int, rng, plant: str = "", step_ms: float = 10.0, kernels: bool = True):
    s = PassSettings(plant=plant, plant_ms=1.5 if plant else 0.0)
    return [replace(anatomy(step_ms, 1.0), kernels=k if kernels else None) for k in simulate_runs(s, n, rng)]


def test_the_kernel_category_is_part_of_the_signature():
    rng = np.random.default_rng(5)
    good = runs(3, rng)
    bad = signature(good, runs(3, rng, "gemm", 11.5), 10.0 / 11.5)
    assert bad.kernel == "gemm" and "in gemm kernels" in bad.describe()
    same = signature(good, runs(3, rng, "gemm", 11.5), 10.0 / 11.5)
    other = signature(good, runs(3, rng, "attention", 11.5), 10.0 / 11.5)
    assert other.kernel == "attention" and same.same_kind(bad) and not other.same_kind(bad)
    # Where a side has no kernel pass, the category is unknown and not held against the regression.
    unknown = signature(good, runs(3, rng, "attention", 11.5, kernels=False), 10.0 / 11.5)
    assert unknown.kernel == "" and unknown.same_kind(bad) and bad.same_kind(unknown)
    assert (bad.term, bad.graph_modes, bad.padding) == (other.term, other.graph_modes, other.padding)


def slower_outside_kernels(n: int, rng, plant: str, host_ms: float):
    """Runs whose profiled step grew by ``host_ms`` outside every kernel, while ``plant`` moved by a little (0.3 ms,
    named by the kernel rule: sure, and above its 2 % material bar of a 10 ms step)."""
    s = PassSettings(plant=plant, plant_ms=0.3)
    return [replace(anatomy(10.0 + host_ms, 1.0), kernels=replace(k, step_s=k.step_s + host_ms / 1e3))
            for k in simulate_runs(s, n, rng)]


def test_a_category_named_beside_a_change_mostly_outside_the_kernels_is_not_its_kind():
    """The engine's nine-commit bisect: a busy-wait of twice the forward before each step left the kernels after it a
    little colder, by 1–2 % of the step in one category or another. Each such category passes the kernel rule with
    enough runs; neither is where the change sits, so a candidate with the same plant is the same kind of change.
    Fails on a signature that takes the largest named category whatever its share of the step's change."""
    rng = np.random.default_rng(11)
    good = runs(4, rng)
    ref = signature(good, slower_outside_kernels(4, rng, "memory", 20.0), 10.0 / 30.0)
    cand = signature(good, slower_outside_kernels(4, rng, "attention", 20.0), 10.0 / 30.0)
    assert (ref.kernel, cand.kernel) == ("", "") and cand.same_kind(ref)
    # The same small shift named where it is most of the step's change: 0.3 ms of a step grown by 0.4 ms.
    small = signature(good, slower_outside_kernels(4, rng, "attention", 0.1), 10.0 / 10.4)
    assert small.kernel == "attention"
    # A shift against the step's change (a kernel faster while the step slowed) is not where the change sits.
    against = [replace(a, kernels=replace(a.kernels, per_step_ns=a.kernels.per_step_ns * 0.8))
               for a in slower_outside_kernels(4, rng, "", 1.0)]
    assert signature(good, against, 10.0 / 11.0).kernel == ""


def test_a_category_is_not_the_change_where_the_step_time_is_unknown_or_still():
    """Fails on a rule that names the category where the profiled step's time is missing, or did not move."""
    rng = np.random.default_rng(3)
    good = runs(3, rng)
    planted = runs(3, rng, "gemm", 11.5)
    assert signature(good, planted, 10.0 / 11.5).kernel == "gemm"
    unknown = [replace(a, kernels=replace(a.kernels, step_s=None)) for a in planted]
    assert signature([replace(a, kernels=replace(a.kernels, step_s=None)) for a in good], unknown,
                     10.0 / 11.5).kernel == ""
    # The step's own time the same on both sides to the last bit, while gemm moved by 1.5 ms.
    still = [replace(a, kernels=replace(a.kernels, step_s=0.01)) for a in planted]
    assert signature([replace(a, kernels=replace(a.kernels, step_s=0.01)) for a in good], still,
                     10.0 / 11.5).kernel == ""


def test_no_category_where_nothing_moved_or_a_pass_is_too_short():
    rng = np.random.default_rng(4)
    good = runs(4, rng)
    assert signature(good, slower_outside_kernels(4, rng, "", 5.0), 10.0 / 15.0).kernel == ""
    # One run a side of 3 profiled steps: too few for the within-run test (kernels.MIN_STEPS), no category.
    short = PassSettings(steps=3, plant="gemm", plant_ms=1.5)
    one_good = [replace(anatomy(10.0, 1.0), kernels=simulate_runs(PassSettings(steps=3), 1, rng)[0])]
    one_bad = [replace(anatomy(11.5, 1.0), kernels=simulate_runs(short, 1, rng)[0])]
    assert signature(one_good, one_bad, 10.0 / 11.5).kernel == ""


def test_the_term_is_the_largest_share_of_the_change_with_that_share():
    """Forward +0.5 ms, host +1.5 ms, fewer tokens (the diagnosis's own example): host holds 0.137 of the change's
    0.248 in log. Fails on a share not divided by the change, or a term other than the largest."""
    base, new = [anatomy(10.0, 1.0)], [anatomy(12.0, 2.5, tokens=600)]
    tok_s = lambda a: a.output_tokens / a.window_s
    ratio = tok_s(new[0]) / tok_s(base[0])
    sig = signature(base, new, ratio)
    assert sig.term == "host"
    assert math.isclose(sig.share, math.log(10 / 12) * 0.75 / math.log(ratio), rel_tol=1e-12)
    assert sig.describe() == f"host time, {sig.share * 100:.0f} % of the change"
    assert 0.5 < sig.share < 0.6  # 55 %: a share, not a log
    # No change at all: every share 0 (not 1), and no kernel category.
    still = signature(base, [anatomy(10.0, 1.0)], 1.0)
    assert still.share == 0.0 and still.kernel == ""


@pytest.mark.parametrize("base, new, ratio", [([], [1], 0.9), ([1], [], 0.9), ([1], [1], 0.0), ([1], [1], -1.0)])
def test_no_signature_without_runs_on_a_side_or_a_positive_ratio(base, new, ratio):
    pick = lambda n: [anatomy(10.0, 1.0)] * len(n)
    assert signature(pick(base), pick(new), ratio) is None


def test_the_graph_mode_most_steps_ran_in_on_each_side():
    """The mode with the largest median share over a side's runs; "" where no run records one."""
    mixed = lambda full: replace(anatomy(10.0, 1.0), graph_step_share={"FULL": full, "PIECEWISE": 1 - full})
    base = [mixed(0.7), mixed(0.6), mixed(0.2)]  # FULL's median share 0.6 against PIECEWISE's 0.4
    new = [mixed(0.3), mixed(0.45), mixed(0.9)]  # PIECEWISE's 0.55 against FULL's 0.45
    sig = signature(base, new, 0.9)
    assert sig.graph_modes == ("FULL", "PIECEWISE")
    assert sig.describe().endswith("graph mode FULL → PIECEWISE")
    bare = [replace(anatomy(10.0, 1.0), graph_step_share={})]
    assert signature(bare, new, 0.9).graph_modes == ("", "PIECEWISE")
    assert signature(bare, new, 0.9).describe().endswith("graph mode none → PIECEWISE")
    assert "graph mode" not in signature(base, base, 0.9).describe()
    assert not sig.same_kind(signature(base, base, 0.9))


@pytest.mark.parametrize("before, after, moved", [(0.0, 0.05, "up"), (0.30, 0.20, "down"), (0.20, 0.24, "same"),
                                                  (0.24, 0.20, "same"), (None, 0.5, "same"), (0.5, None, "same")])
def test_padding_moved_by_at_least_five_points_of_the_tokens(before, after, moved):
    """5 points exactly is a move (history.facts.SHARE_POINTS); a side with no figure is "same"."""
    pad = lambda w: [replace(anatomy(10.0, 1.0), padding_waste=w)] * 3
    sig = signature(pad(before), pad(after), 0.9)
    assert sig.padding == moved
    assert (f"padding {moved}" in sig.describe()) == (moved != "same")


def test_the_same_kind_needs_the_same_term_graph_modes_and_padding():
    sig = Signature("forward", 0.9, ("FULL", "FULL"), "same", "gemm")
    assert sig.same_kind(replace(sig, share=0.5, kernel=""))
    for other in (replace(sig, term="host"), replace(sig, graph_modes=("FULL", "PIECEWISE")),
                  replace(sig, padding="up"), replace(sig, kernel="attention")):
        assert not sig.same_kind(other) and not other.same_kind(sig)


@pytest.mark.parametrize("sig, words", [
    (Signature("forward", 0.97, ("FULL", "PIECEWISE"), "up", "gemm"),
     "forward time, 97 % of the change, in gemm kernels, graph mode FULL → PIECEWISE, padding up"),
    (Signature("host", 0.5, ("", ""), "down"), "host time, 50 % of the change, padding down"),
    (Signature("tokens", 0.25, ("PIECEWISE", ""), "same"), "tokens, 25 % of the change, graph mode PIECEWISE → none"),
    (Signature("", 0.0, ("", ""), "same"), "no step term, 0 % of the change"),
])
def test_the_signature_in_words(sig, words):
    assert sig.describe() == words


def test_windows_with_no_step_figures_have_no_term():
    """Runs whose windows hold no steps give no step term to rank: the term is "" with no share."""
    empty = [replace(anatomy(10.0, 1.0), steps=0, output_tokens=0, step_s=0.0, host_s=None, window_s=0.0)]
    sig = signature(empty, empty, 0.9)
    assert (sig.term, sig.share) == ("", 0.0) and sig.describe() == "no step term, 0 % of the change"
