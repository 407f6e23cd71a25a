"""The state of an incrementally maintained query: ``h`` of every row so far as keyed groups
with monoid values, plus — for a join — each input's rows, indexed by its join columns.

A group is ``(n, components)``: ``n`` the support count (how many joined rows, counted with
their multiplicities, fall in the group) and one component per aggregate (:mod:`.monoids`).
:meth:`State.merge` is ``⊗``: a full outer join on the key adding counts and merging
components; with negative counts it is the diminisher ``⊗~``, and a group whose count reaches
0 leaves the state (never a value comparison: a group whose sum is 0 stays while it has rows).
A count below 0 would mean a deletion of something never inserted: :class:`StateError`.

The rows of a join input are the relation's filtered, projected rows with their multiplicity
(a multiset); a deletion of a row the state does not hold is ignored and counted
(:meth:`State.apply_rows`), which keeps every count ≥ 0. A query of one relation keeps no rows
(its groups are the whole state): its deletions are checked where they are made
(:func:`aspen.queries.incremental.delta.admissible`, or a diff of old and new rows).

>>> from aspen.queries.incremental.monoids import COUNT
>>> state = State(index_columns={}, relations=1, monoids=[COUNT])
>>> state.merge({("a",): (2, (2,))}), state.groups
([(('a',), None, (2, (2,)))], {('a',): (2, (2,))})
>>> state.merge({("a",): (-2, (-2,))}), state.groups
([(('a',), (2, (2,)), None)], {})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aspen.errors import LakeError

__all__ = ["Group", "State", "StateError"]

#: One group: its support count and its aggregate components.
Group = tuple[int, tuple]


class StateError(LakeError):
    """The state cannot take a change (a count below 0): rebuild it from the tables."""


class State:
    """Groups, the join inputs' rows and their indexes, and the batch the state covers."""

    def __init__(self, index_columns: Mapping[int, set[tuple[int, ...]]], relations: int,
                 monoids: Sequence[Any] = ()) -> None:
        self.batch_id = -1  # the last maintained batch the state covers (-1: none)
        #: Per table read, its rows as the query reads them, unfiltered (the statistics'
        #: row counts; None: not known, a state stored before they were kept).
        self.table_rows: dict[str, int] | None = {}
        self.journal = (0, 0)  # its stored form: batches and rows appended since written whole
        self.monoids = tuple(monoids)
        self.groups: dict[tuple, Group] = {}
        self.rows: list[dict[tuple, int]] = [{} for _ in range(relations)]
        self.indexes: list[dict[tuple[int, ...], dict[tuple, dict[tuple, int]]]] = [
            {cols: {} for cols in index_columns.get(p, ())} for p in range(relations)]

    # -- the join inputs -------------------------------------------------------------------

    def apply_rows(self, position: int, change: Mapping[tuple, int]) -> tuple[dict[tuple, int],
                                                                              int]:
        """Add the signed rows ``change`` to relation ``position``; the change as applied
        (deletions of rows not held dropped) and how many copies were dropped."""
        held, applied, ignored = self.rows[position], {}, 0
        for row, count in change.items():
            have = held.get(row, 0)
            if count < 0 and -count > have:
                ignored += -count - have
                count = -have
            if not count:
                continue
            applied[row] = count
            total = have + count
            if total:
                held[row] = total
            else:
                del held[row]
            for cols, index in self.indexes[position].items():
                key = tuple(row[c] for c in cols)
                bucket = index.setdefault(key, {})
                if total:
                    bucket[row] = total
                else:
                    bucket.pop(row, None)
                    if not bucket:
                        del index[key]
        return applied, ignored

    def ensure_indexes(self, index_columns: Mapping[int, set[tuple[int, ...]]]) -> None:
        """Add the indexes ``index_columns`` names that are missing, from the rows held (a
        join order that looks a relation up by other columns; the rows are unchanged)."""
        for position, wanted in index_columns.items():
            have = self.indexes[position]
            for cols in wanted:
                if cols in have:
                    continue
                index: dict[tuple, dict[tuple, int]] = {}
                for row, count in self.rows[position].items():
                    index.setdefault(tuple(row[c] for c in cols), {})[row] = count
                have[cols] = index

    def lookup(self, position: int, columns: tuple[int, ...], key: tuple) -> dict[tuple, int]:
        """The rows of relation ``position`` whose ``columns`` equal ``key``, with counts."""
        return self.indexes[position][columns].get(key, {})

    # -- the groups --------------------------------------------------------------------------

    def merge(self, delta: Mapping[tuple, Group]) -> list[tuple[tuple, Group | None,
                                                                Group | None]]:
        """``state ⊗ delta`` (negative counts: ``⊗~``); per key changed, its old and new group
        (None: absent)."""
        changed = []
        for key, (dn, components) in delta.items():
            old = self.groups.get(key)
            n = (old[0] if old else 0) + dn
            if n < 0:
                raise StateError(f"group {key!r} would count {n} rows: a deletion of rows "
                                 "never inserted; rebuild the query's state")
            if n == 0:
                new = None
                self.groups.pop(key, None)
            else:
                merged = components if old is None else tuple(
                    m.merge(a, b) for m, a, b in zip(self.monoids, old[1], components,
                                                     strict=True))
                new = (n, merged)
                self.groups[key] = new
            if old != new:
                changed.append((key, old, new))
        return changed

    # -- size --------------------------------------------------------------------------------

    def row_count(self) -> int:
        """Stored rows: every group and every distinct join-input row."""
        return len(self.groups) + sum(len(rows) for rows in self.rows)
