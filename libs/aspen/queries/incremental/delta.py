"""A batch's input changes: per table, signed rows — a multiplicity per row, +1 an insertion,
−1 a deletion, a value change of a key −old +new.

Rows are tuples in the order of the table's columns (:attr:`SignedRows.columns`), their values
plain Python (:func:`plain`: lists become tuples, NaN and NaT become None). A deletion may only
remove a row that is there (seed 004, ``ΔS⁻ ⊆ S``): :func:`diff` never produces another, and
:func:`admissible` drops the ones that would, counting them.

>>> change = diff(("k", "v"), old=[("a", 1), ("b", 2)], new=[("a", 1), ("b", 3)])
>>> sorted(change.counts.items())
[(('b', 2), -1), (('b', 3), 1)]
>>> kept, ignored = admissible(SignedRows(("k",), {("x",): -1, ("y",): 1}), present={})
>>> kept.counts, ignored
({('y',): 1}, 1)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

__all__ = ["SignedRows", "admissible", "diff", "plain", "plain_row"]


@dataclass
class SignedRows:
    """Rows of one table with signed multiplicities (zero-count rows are never kept)."""

    columns: tuple[str, ...]
    counts: dict[tuple, int] = field(default_factory=dict)

    def add(self, row: tuple, count: int = 1) -> None:
        """Add ``count`` (negative: remove) copies of ``row``."""
        total = self.counts.get(row, 0) + count
        if total:
            self.counts[row] = total
        else:
            self.counts.pop(row, None)

    def dicts(self) -> Iterable[tuple[dict[str, Any], int]]:
        """Each row as a mapping of its columns, with its multiplicity."""
        for row, count in self.counts.items():
            yield dict(zip(self.columns, row, strict=True)), count

    def __len__(self) -> int:
        return len(self.counts)

    @staticmethod
    def inserts(columns: tuple[str, ...], rows: Iterable[tuple]) -> SignedRows:
        """Every row of ``rows`` inserted once (a table built from nothing)."""
        out = SignedRows(columns)
        for row in rows:
            out.add(row)
        return out


def plain(value: Any) -> Any:
    """``value`` as a plain, hashable Python value (what rows hold).

    >>> import numpy as np, pandas as pd
    >>> plain(np.int64(3)), plain(float("nan")), plain(pd.NaT), plain([1, 2])
    (3, None, None, (1, 2))
    """
    if value is None:
        return None
    if hasattr(value, "to_pydatetime"):  # a pandas Timestamp (NaT included)
        return None if value != value else value.to_pydatetime()
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, str | bool | int | datetime | date | bytes):
        return value
    if hasattr(value, "tolist"):  # a numpy scalar or array
        return plain(value.tolist())
    if isinstance(value, list | tuple):
        return tuple(plain(v) for v in value)
    return value


def plain_row(row: Iterable[Any]) -> tuple:
    """A row of :func:`plain` values."""
    return tuple(plain(v) for v in row)


def diff(columns: tuple[str, ...], old: Iterable[tuple], new: Iterable[tuple]) -> SignedRows:
    """The change from the rows ``old`` to the rows ``new`` (bags): ``new − old``."""
    counts: Counter[tuple] = Counter(plain_row(r) for r in new)
    counts.subtract(plain_row(r) for r in old)
    return SignedRows(columns, {row: n for row, n in counts.items() if n})


def admissible(change: SignedRows, present: Mapping[tuple, int]) -> tuple[SignedRows, int]:
    """``change`` without the deletions of rows ``present`` does not hold (beyond its count),
    and how many copies were dropped: a deletion of a row never there is ignored."""
    kept, ignored = SignedRows(change.columns), 0
    for row, count in change.counts.items():
        if count < 0 and -count > present.get(row, 0):
            ignored += -count - present.get(row, 0)
            count = -present.get(row, 0)
        if count:
            kept.add(row, count)
    return kept, ignored
