"""Exact running sums: a window's SUM and AVG as the real sum of its values, rounded once.

A running float sum ``total += value`` rounds at every step, so its result depends on the order
the values came in, and a window averaging exactly the threshold can land one ulp above it
(89.6 + 90.2 + 88.9 + 91.3 adds up to 360.00000000000006, not 360.0). :class:`ExactSum` keeps
the sum without any rounding instead: every finite float is ``n / 2**k`` for integers ``n`` and
``k ≤ 1074``, so the sum of any of them is one integer over a power of two, kept as
``num / 2**shift``. Adding and removing (sliding windows) are integer additions, exact and
independent of order. What "exact" means here, precisely:

- ``value`` (SUM) is the real sum of the values, rounded once to the nearest float (ties to
  even) — the same number as ``math.fsum(values)``; a sum of ints only stays an int, as
  Python's ``sum`` gives it;
- ``mean(count)`` (AVG) is the real sum divided by ``count``, rounded once — never the rounded
  sum divided again, so ``min ≤ avg ≤ max`` always holds;
- a ``nan`` among the values makes both ``nan``, as does ``inf`` with ``-inf``; an infinity
  alone makes them that infinity; a finite sum beyond the float range rounds to ±inf.

The state (:meth:`ExactSum.to_state`) is a short list of integers that JSON keeps exactly.

>>> values = [89.6, 90.2, 88.9, 91.3]
>>> running = 0.0
>>> for v in values:
...     running += v
>>> exact = ExactSum.of(values)
>>> running, exact.value, exact.mean(4)
(360.00000000000006, 360.0, 90.0)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

from aspen.errors import EngineError

__all__ = ["ExactSum", "exact_mean", "exact_sum"]

_INF = math.inf


class ExactSum:
    """The exact sum of a multiset of numbers (ints and floats), with additions and removals.

    >>> acc = ExactSum.of([1e16, 1.0, -1e16])
    >>> acc.value
    1.0
    >>> acc.remove(1.0)
    >>> acc.value, ExactSum.from_state(acc.to_state()) == acc
    (0.0, True)
    """

    __slots__ = ("floats", "nan", "neg_inf", "num", "pos_inf", "shift")

    def __init__(self) -> None:
        self.num = 0  # the finite values' sum is num / 2**shift, exactly
        self.shift = 0
        self.floats = 0  # members that are floats (none: the sum is an int)
        self.pos_inf = 0  # members that are +inf, -inf, nan
        self.neg_inf = 0
        self.nan = 0

    @classmethod
    def of(cls, values: Iterable[Any]) -> ExactSum:
        """The exact sum of ``values``."""
        acc = cls()
        for value in values:
            acc.add(value)
        return acc

    # --- adding and removing ---------------------------------------------------------------

    def add(self, value: Any) -> None:
        """Add ``value`` (an int or a float; other real numbers are taken as floats)."""
        self._take(value, 1)

    def remove(self, value: Any) -> None:
        """Remove ``value``, one added before: the sum is then exactly as if it never was."""
        self._take(value, -1)

    def _take(self, value: Any, sign: int) -> None:
        kind = type(value)
        if kind is not float and kind is not int:
            value = _number(value)
            kind = type(value)
        if kind is int:
            self.num += sign * (value << self.shift)
            return
        self.floats += sign
        try:
            n, d = value.as_integer_ratio()
        except (OverflowError, ValueError):  # ±inf or nan: counted, outside the finite sum
            if value != value:
                self.nan += sign
            elif value > 0:
                self.pos_inf += sign
            else:
                self.neg_inf += sign
            return
        k = d.bit_length() - 1  # d is 2**k
        if k > self.shift:
            self.num <<= k - self.shift
            self.shift = k
        self.num += sign * (n << (self.shift - k))

    # --- reading ---------------------------------------------------------------------------

    @property
    def value(self) -> int | float:
        """The sum, rounded once (an int when every member is an int).

        >>> ExactSum.of([0.1, 0.2, 0.3]).value, ExactSum.of([2, 3]).value
        (0.6, 5)
        """
        special = self._special()
        if special is not None:
            return special
        if self.floats == 0:  # ints only: num is a multiple of 2**shift
            return self.num >> self.shift
        return _divide(self.num, 1 << self.shift)

    def mean(self, count: int) -> float:
        """The sum divided by ``count`` (> 0), rounded once.

        >>> ExactSum.of([0.1, 0.2, 0.3]).mean(3), ExactSum.of([1, 2]).mean(2)
        (0.2, 1.5)
        """
        if count <= 0:
            raise EngineError(f"a mean needs a positive count, not {count}")
        special = self._special()
        if special is not None:
            return special
        return _divide(self.num, count << self.shift)

    def _special(self) -> float | None:
        if self.nan or (self.pos_inf and self.neg_inf):
            return math.nan
        if self.pos_inf:
            return _INF
        if self.neg_inf:
            return -_INF
        return None

    # --- state -----------------------------------------------------------------------------

    def to_state(self) -> list[int]:
        """The state as integers, canonical (the same sum gives the same list, whatever the
        order it was built in): ``[num, shift, floats]``, then the counts of +inf, -inf and
        nan when any is not zero.

        >>> ExactSum.of([0.5, 0.25]).to_state(), ExactSum.of([0.25, 0.5]).to_state()
        ([3, 2, 2], [3, 2, 2])
        """
        num, shift = self.num, self.shift
        if num == 0:
            shift = 0
        elif shift:
            zeros = min((num & -num).bit_length() - 1, shift)  # trailing zero bits to drop
            num, shift = num >> zeros, shift - zeros
        state = [num, shift, self.floats]
        if self.pos_inf or self.neg_inf or self.nan:
            state += [self.pos_inf, self.neg_inf, self.nan]
        return state

    @classmethod
    def from_state(cls, state: list[int]) -> ExactSum:
        """The sum :meth:`to_state` wrote."""
        acc = cls()
        acc.num, acc.shift, acc.floats = (int(x) for x in state[:3])
        if len(state) > 3:
            acc.pos_inf, acc.neg_inf, acc.nan = (int(x) for x in state[3:6])
        return acc

    @classmethod
    def from_total(cls, total: Any) -> ExactSum:
        """A sum rebuilt from a total kept as one number (state written before sums were kept
        exactly): exact from here on, but whatever rounding that total already had stays.

        >>> ExactSum.from_total(2.5).value, ExactSum.from_total(7).value
        (2.5, 7)
        """
        return cls.of([total])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExactSum):
            return NotImplemented
        return self.to_state() == other.to_state()

    def __hash__(self) -> int:
        return hash(tuple(self.to_state()))

    def __repr__(self) -> str:
        return f"ExactSum({self.value!r})"


def exact_sum(values: Iterable[Any]) -> int | float:
    """The sum of ``values`` rounded once: ``math.fsum`` for floats, an int for ints only.

    >>> exact_sum([89.6, 90.2, 88.9, 91.3]), exact_sum([1, 2, 3])
    (360.0, 6)
    """
    return ExactSum.of(values).value


def exact_mean(values: Iterable[Any]) -> float:
    """The mean of ``values`` (at least one), rounded once from their exact sum.

    >>> exact_mean([89.6, 90.2, 88.9, 91.3])
    90.0
    """
    acc, count = ExactSum(), 0
    for value in values:
        acc.add(value)
        count += 1
    return acc.mean(count)


def _number(value: Any) -> int | float:
    """``value`` as an int or a float; an aggregate over anything else is refused."""
    if isinstance(value, bool | numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise EngineError(f"sum and avg take numbers, not {value!r} ({type(value).__name__})")


def _divide(num: int, den: int) -> float:
    """``num / den`` rounded once (Python's int division is correctly rounded); ±inf beyond
    the float range."""
    try:
        return num / den
    except OverflowError:
        return _INF if num > 0 else -_INF
