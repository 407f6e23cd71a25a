"""The aggregates of a query as monoids: a zero, a lift of one row's value with its sign, a
merge ``⊗`` (which with negative counts is also the diminisher ``⊗~``) and the final value.

- ``COUNT(*)``, ``COUNT(x)``: an integer, merged by ``+``.
- ``SUM(x)``, ``AVG(x)``: ``[total, non-null count, float count]`` merged componentwise by
  ``+``; a float is added as the exact fraction it is, so deleting what was inserted restores
  the total bit for bit (``(X ⊗ Y) ⊗~ Y = X``); AVG is total / count, computed in ``a``.
- ``MIN(x)``, ``MAX(x)`` and every ``DISTINCT`` aggregate: a multiset (value → count) merged by
  adding counts, a value leaving when its count reaches 0 — so a deletion is exact, where a
  plain min/max monoid has no inverse.

NULL arguments are skipped, as in SQL: ``SUM`` and ``AVG`` of no value are NULL.

>>> total = SUM.merge(SUM.lift(2.5, 1), SUM.lift(1.0, 1))
>>> SUM.final(total, "sum"), SUM.final(SUM.merge(total, SUM.lift(2.5, -1)), "avg")
(3.5, 1.0)
>>> bag = BAG.merge(BAG.lift(3, 1), BAG.lift(5, 1))
>>> BAG.final(bag, "max"), BAG.final(BAG.merge(bag, BAG.lift(5, -1)), "max")
(5, 3)
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from aspen.queries.incremental.expr import NotIncrementalError

__all__ = ["BAG", "COUNT", "SUM", "BagMonoid", "CountMonoid", "SumMonoid"]


class CountMonoid:
    """Non-null values counted: ``+`` on integers."""

    @staticmethod
    def zero() -> int:
        return 0

    @staticmethod
    def lift(value: Any, sign: int) -> int:
        return 0 if value is None else sign

    @staticmethod
    def merge(a: int, b: int) -> int:
        return a + b

    @staticmethod
    def final(value: int, kind: str) -> int:
        return value


class SumMonoid:
    """``[total, non-null count, float count]``: SUM and AVG, exact under deletions."""

    @staticmethod
    def zero() -> list:
        return [0, 0, 0]

    @staticmethod
    def lift(value: Any, sign: int) -> list:
        if value is None:
            return [0, 0, 0]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise NotIncrementalError(f"SUM/AVG of a {type(value).__name__} is not maintained "
                                      "incrementally")
        if isinstance(value, float):
            try:
                return [Fraction(value) * sign, sign, sign]
            except (OverflowError, ValueError):  # inf, nan: no exact fraction
                raise NotIncrementalError("SUM/AVG over a non-finite number is not maintained "
                                          "incrementally") from None
        return [value * sign, sign, 0]

    @staticmethod
    def merge(a: list, b: list) -> list:
        return [a[0] + b[0], a[1] + b[1], a[2] + b[2]]

    @staticmethod
    def final(value: list, kind: str) -> Any:
        total, count, floats = value
        if count == 0:
            return None
        if kind == "avg":
            return float(Fraction(total) / count)
        return float(total) if floats else int(total)


class BagMonoid:
    """A multiset of non-null values (value → count), merged by adding counts."""

    @staticmethod
    def zero() -> dict:
        return {}

    @staticmethod
    def lift(value: Any, sign: int) -> dict:
        return {} if value is None else {value: sign}

    @staticmethod
    def merge(a: dict, b: dict) -> dict:
        out = dict(a)
        for value, count in b.items():
            total = out.get(value, 0) + count
            if total:
                out[value] = total
            else:
                out.pop(value, None)
        return out

    @staticmethod
    def final(value: dict, kind: str) -> Any:
        """The aggregate ``kind`` over the distinct values (``min``, ``max``, ``count``,
        ``sum``, ``avg``)."""
        values = list(value)
        if kind == "count":
            return len(values)
        if not values:
            return None
        if kind == "min":
            return min(values)
        if kind == "max":
            return max(values)
        total = SumMonoid.zero()
        for v in values:
            total = SumMonoid.merge(total, SumMonoid.lift(v, 1))
        return SumMonoid.final(total, kind)


COUNT = CountMonoid()
SUM = SumMonoid()
BAG = BagMonoid()
