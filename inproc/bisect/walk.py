"""The sitting's walk: the regression measured on a checked reference, the map's points, the bisection.

Each loop measures a pair, then looks: the oracle's check of its reference
(:meth:`Sitting.levels`), then the call at that look's share of the error rate
(:mod:`inproc.bisect.looks`). It stops at a call, at ``--max-pairs`` looks, when the
``--budget`` of child seconds is spent, or when the good or the bad revision's runs fall in
two clusters (:func:`inproc.bisect.agree.two_clusters`): insufficient data, never a commit.
"""
from __future__ import annotations

from inproc.bisect import search
from inproc.bisect.oracle import (BAD, GOOD, INSUFFICIENT, MIN_CALL_RUNS, MIN_REFERENCE_RUNS, SKIPPED, UNDECIDED,
                                  Reference, decide, reference, regressed)
from inproc.bisect.runs import DISTURBED
from inproc.bisect.session import Levels, Sitting, good_level_runs, kept_pairs, level_holds, refuse
from inproc.compare.spread import MIN_SPREAD_DF


def _reference_at(s: Sitting, lv: Levels, look: int) -> Reference | str:
    """Bad against good on the runs that agree with their levels, or why the reference is not settled yet."""
    bad, _ = kept_pairs(s, lv, s.last)
    good = good_level_runs(s, lv)
    if lv.spread is None or lv.spread.df < MIN_SPREAD_DF:
        df = 0 if lv.spread is None else lv.spread.df
        return f"the spread rests on {df:g} degrees of freedom; a call needs {MIN_SPREAD_DF}"
    if not level_holds(s, lv):
        return f"{s.good_varied()}: fewer than two of them, or not most, agree with one level"
    if len(bad) < MIN_REFERENCE_RUNS or not level_holds(s, lv, s.last, MIN_REFERENCE_RUNS):
        return f"{len(bad)} bad runs agree with their level beside good runs that agree with theirs; a call needs " \
               f"{MIN_REFERENCE_RUNS}, and most of its runs"
    return reference(good, bad, lv.spread, look, s.oracle)


def _echo_check(s: Sitting, lv: Levels) -> None:
    if lv.spread is not None:
        off = sorted(p + 1 for p in lv.off)
        s.echo(f"bisect: spread {lv.spread.sigma * 100:.1f} % ({lv.spread.source})"
               + (f"; runs {', '.join(map(str, off))} off their revision's level, not used" if off else ""))


def measure_regression(s: Sitting) -> Reference:
    """Bad, then good, until compare calls bad slower than good on a checked reference, or the cap or the budget."""
    while True:
        look = len(s.runs_of(s.last))
        if why := s.clusters():
            s.echo(f"bisect: {why}: no level to call against")
            return Reference(None, INSUFFICIENT, f"insufficient data: {why}", None)
        if look:
            lv = s.levels()
            _echo_check(s, lv)
            ref = _reference_at(s, lv, look)
            if isinstance(ref, Reference):
                s.echo(f"bisect: bad against good: tok/s {ref.change.ratio_text}, {ref.verdict}: {ref.reason}")
                if regressed(ref):
                    return ref
            if look >= s.oracle.max_pairs or s.over_budget():
                return _unsettled(s, lv, ref)
        for i, role in ((s.last, "bad"), (0, "good")):
            line = s.run(i, role)
            if line.tok_s is None and line.status != DISTURBED:
                refuse(s, line, role)
        if why := s.too_disturbed():
            return Reference(None, INSUFFICIENT, why, None)


def _unsettled(s: Sitting, lv: Levels, ref: Reference | str) -> Reference:
    """The reference at the cap without a regression: insufficient data when the good runs disagreed, or when the
    interval of bad against good still holds a slowdown beyond the threshold (the runs cannot rule one out); "no
    regression" only when the interval rules out any slowdown beyond it."""
    disagreed = isinstance(ref, str) or any(p in lv.off for p in s.positions(0)) or lv.spread.switched
    if disagreed:
        why = f"insufficient data: {s.good_varied()}" + (f" ({ref})" if isinstance(ref, str) else "")
        return Reference(ref.change if isinstance(ref, Reference) else None, INSUFFICIENT, why, None)
    if not_ruled_out(ref, s.oracle.threshold):
        c = ref.change
        why = (f"insufficient data: bad against good is {c.ratio_text}, "
               f"not called slower, yet the interval holds a slowdown beyond the {s.oracle.threshold:.0%} threshold "
               f"at a spread of {lv.spread.sigma:.1%} a run; more pairs (--max-pairs) or a quieter machine would "
               f"tell ({ref.reason})")
        return Reference(c, INSUFFICIENT, why, None)
    return ref


def not_ruled_out(ref: Reference, threshold: float) -> bool:
    """True when bad against good's interval reaches a slowdown beyond the threshold as compare defines it (bad's tok/s
    below good's ÷ (1 + ``threshold``)): a regression beyond the threshold is as consistent with the runs as none."""
    return ref.change is not None and ref.change.interval.low < 1 / (1 + threshold)


def refreshed(s: Sitting, lv: Levels) -> Reference | None:
    """The regression's size and bounds on the runs as they are now: the good level's runs grow with every pair, and
    the spread's degrees of freedom with them (the verdict and the signature stay those that called it). None when
    the reference no longer holds: the good or the bad revision's runs no longer mostly agree with one level."""
    bad, _ = kept_pairs(s, lv, s.last)
    good = good_level_runs(s, lv)
    if (len(bad) < MIN_REFERENCE_RUNS or not level_holds(s, lv) or not level_holds(s, lv, s.last, MIN_REFERENCE_RUNS)
            or lv.spread is None):
        return None
    now = reference(good, bad, lv.spread, s.oracle.max_pairs, s.oracle)
    return Reference(now.change, s.ref.verdict, s.ref.reason, s.ref.signature)


def judge(s: Sitting, i: int) -> None:
    """Pairs (candidate, good) until the oracle calls, the cap, the budget, or the candidate fails to run; a pair
    (bad, good) instead while the reference no longer holds."""
    while i not in s.verdicts:
        if why := s.clusters():
            s.settle(i, INSUFFICIENT, f"{why}: no level to call against")
            return
        look = len(s.runs_of(i))
        lv = s.levels()
        ref = refreshed(s, lv)
        if ref is None:
            if len(s.runs_of(s.last)) >= 2 * s.oracle.max_pairs or s.over_budget():
                s.settle(i, INSUFFICIENT, f"the reference no longer holds: {s.good_varied()}, the bad revision's "
                                          f"{', '.join(f'{r.tok_s:.1f}' for r in s.runs_of(s.last))}")
                return
            s.echo("bisect: the reference no longer holds (the good or the bad revision's runs disagree); "
                   "the bad revision is measured again")
            s.run(s.last, "bad")
            s.run(0, "good")
            continue
        if look:
            cand, around = kept_pairs(s, lv, i)
            if len(cand) >= MIN_CALL_RUNS and level_holds(s, lv, i):
                d = decide(ref, good_level_runs(s, lv), cand, lv.spread, look, s.oracle, around)
                if d.verdict != UNDECIDED:
                    s.settle(i, d.verdict, d.note, d.change)
                    return
                note, change = d.note, d.change
            else:
                note, change = (f"{len(cand)} of its {look} runs agree with its level beside good runs on the good "
                                f"revision's level; a call needs {MIN_CALL_RUNS}, and most of its runs"), None
            if look >= s.oracle.max_pairs or s.over_budget():
                s.settle(i, INSUFFICIENT, f"{note}; still undecided after {look} pairs", change)
                return
        line = s.run(i, "candidate")
        if line.status == DISTURBED:  # every try disturbed: the machine, not the revision, is in doubt
            s.settle(i, INSUFFICIENT, f"insufficient data: its runs were disturbed ({line.reason})")
            return
        if line.tok_s is None:
            s.settle(i, SKIPPED, line.build or f"{line.status}: {line.reason}")
            return
        s.run(0, "good")


def walk(s: Sitting, map_count: int) -> None:
    """The regression, the map's points (if any), then the bisection of the last change from good to bad."""
    s.ref = measure_regression(s)
    if not regressed(s.ref):
        return
    for i, verdict in ((0, GOOD), (s.last, BAD)):
        if i not in s.verdicts:
            s.settle(i, verdict, s.ref.reason if i else "the good revision", s.ref.change if i else None)
    for i in search.map_points(s.last, map_count):
        if s.clusters():
            return
        judge(s, i)
    while (i := search.next_target({k: v.verdict for k, v in s.verdicts.items()}, s.last)) is not None:
        if s.over_budget() or s.clusters():  # two clusters: nothing more can be called (the result says so)
            return
        judge(s, i)
