"""The few numeric rules every metric shares: exact band comparisons, medians, and the one
rounding applied to every float written to scores.json (so re-scoring writes the same bytes)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from fractions import Fraction

PLACES = 6


def r6(value: float | int | Fraction | None) -> float | None:
    """A float for JSON: rounded to six places, never -0.0, never inf or nan (None instead)."""
    if value is None:
        return None
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return None
    rounded = round(number, PLACES)
    return 0.0 if rounded == 0 else rounded


def at_least(hits: int, total: int, threshold: float) -> bool:
    """hits / total >= threshold, exactly: 9 of 12 meets 0.75, and 0.4 means two fifths."""
    if total <= 0:
        return False
    return Fraction(hits, total) >= Fraction(repr(float(threshold)))


def ratio(numerator: int, denominator: int) -> Fraction | None:
    return None if denominator == 0 else Fraction(numerator, denominator)


def median(values: Sequence[float | int | Fraction]) -> Fraction | None:
    """The median, exact (a Fraction) so that rounding happens once, at the end."""
    if not values:
        return None
    return Fraction(statistics.median(sorted(Fraction(v) for v in values)))
