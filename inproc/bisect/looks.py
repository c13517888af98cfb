"""The sequential rule: how much of an error rate each look at a growing set of pairs may spend.

A bisect measures a pair, looks, and measures another until it can call or a budget is
spent: a test repeated on growing data. Tested each time at α it would err far more often
than α. The rule is an alpha-spending one (Lan & DeMets 1983, *Biometrika* 70:659) with a
fixed number of looks K (``--max-pairs``): half of α is spent evenly over the K − 1 looks
before the last, α/(2(K − 1)) each, and the other half at the last look. By the union
bound the chance that any look errs is at most α, whatever stops the sitting early (a
call, the wall-time budget): the looks' levels add up to α. Spending half at the last look
keeps most of a fixed-size test's power when the data need every pair; spending the rest
evenly lets a clear change be called at the first looks.
"""
from __future__ import annotations


def look_alpha(look: int, looks: int, alpha: float) -> float:
    """The level of look ``look`` (1-based) of at most ``looks``: α/(2(K − 1)) before the last, α/2 at it."""
    if looks <= 1:
        return alpha
    return alpha / 2 if look >= looks else alpha / (2 * (looks - 1))
