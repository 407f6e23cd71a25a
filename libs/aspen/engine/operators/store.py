"""Provenance state shared by the stateful operators: tuple → formula, indexed by variable.

A deletion touches only the tuples whose formula may mention a dead variable
(docs/architecture.md, "Limits"): the index maps each variable to a *superset* of the tuples
mentioning it (supports only grow between restrictions; stale entries are skipped). Entries
changed since the index was last brought up to date are *dirty*; until the index is first built
(a new store, or one just restored from bytes) every entry is, and no set of them is kept. When
most entries are dirty and CUDD is in use, a deletion finds the dirty entries it touches with
one compiled walk over their BDDs (:func:`~aspen.engine.support.mention_scanner`) instead of
indexing them all.

>>> from aspen.provenance import ProvenanceManager
>>> m = ProvenanceManager(backend="python")
>>> s = ProvenanceStore(m)
>>> s.add(("a", "b"), m.var("p1"))[0] is None
True
>>> _ = s.add(("a", "c"), m.and_(m.var("p1"), m.var("p2")))
>>> sorted(t for t, _, new in s.restrict({"p2"}) if m.is_false(new))
[('a', 'c')]
>>> sorted(s)
[('a', 'b')]
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator

from aspen.engine.implication import implication_test
from aspen.engine.support import mention_scanner, restriction, support_keys
from aspen.provenance.bdd import Formula, ProvenanceManager

__all__ = ["SCANS_BEFORE_INDEX", "ProvenanceStore"]

#: Deletions that scan a mostly unindexed store (one compiled walk over its dirty entries)
#: before the next one indexes it instead. Indexing costs about five scans (measured on a
#: restored 300-node query node: 0.15 s against 0.03 s), so, as in ski rental, a store that is
#: restored and deleted from once (a Spark node each batch) never pays for the index, and one
#: that stays in memory through many deletions pays at most about twice the best choice.
SCANS_BEFORE_INDEX = 4


class ProvenanceStore:
    """A map tuple → non-false formula with a variable → tuples index."""

    __slots__ = ("manager", "data", "index", "dirty", "implies", "journal", "keys", "scan",
                 "scans")

    def __init__(self, manager: ProvenanceManager) -> None:
        self.manager = manager
        self.implies = implication_test(manager)
        self.keys = support_keys(manager)
        self.scan = mention_scanner(manager)  # None: deletions always go through the index
        self.scans = 0  # deletions that scanned the dirty entries since the index was refreshed
        self.data: dict[tuple, Formula] = {}
        self.index: dict[Hashable, set[tuple]] = {}  # variable key (support.py) → entries
        #: keys changed since the index was last brought up to date; None until the index is
        #: first built: every key is (no copy of the keys: a build or a restore makes millions)
        self.dirty: set[tuple] | None = None
        #: while tracking: key → whether it was present when tracking started (keys that came
        #: or went since; see :meth:`track_membership`)
        self.journal: dict[tuple, bool] | None = None

    # -- mapping protocol ---------------------------------------------------------------------
    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.data)

    def __getitem__(self, key: tuple) -> Formula:
        return self.data[key]

    def get(self, key: tuple) -> Formula | None:
        return self.data.get(key)

    def items(self) -> Iterable[tuple[tuple, Formula]]:
        return self.data.items()

    # -- membership tracking (a batch's view delta in proportion to what changed) -----------
    def track_membership(self) -> None:
        """Start recording the keys that enter or leave the store.

        >>> from aspen.provenance import ProvenanceManager
        >>> m = ProvenanceManager(backend="python")
        >>> s = ProvenanceStore(m)
        >>> _ = s.add(("a",), m.var("x"))
        >>> s.track_membership()
        >>> _ = s.add(("b",), m.var("y")); _ = s.restrict({"x"})
        >>> sorted(s.membership_changes().items())
        [(('a',), True), (('b',), False)]
        """
        self.journal = {}

    def membership_changes(self) -> dict[tuple, bool]:
        """Stop tracking; return key → whether it was present when tracking started, for every
        key that entered or left meanwhile (it may have come back: compare with the store)."""
        journal, self.journal = self.journal or {}, None
        return journal

    def note_new(self, key: tuple) -> None:
        """Record that ``key`` (absent until now) enters; for callers writing :attr:`data`."""
        if self.journal is not None and key not in self.journal:
            self.journal[key] = False

    # -- updates ------------------------------------------------------------------------------
    @property
    def unindexed(self) -> int:
        """How many entries changed since the index was last brought up to date (at most; a
        removed entry may still be counted)."""
        return len(self.data) if self.dirty is None else len(self.dirty)

    def refresh_index(self) -> int:
        """Index the supports of the entries changed since the last restriction (done lazily by
        :meth:`restrict`: a build ORs many derivations into one entry, whose support is then
        computed once). Returns how many entries were indexed."""
        index = self.index
        support = self.keys.of_formula
        data = self.data
        dirty = data if self.dirty is None else self.dirty
        for key in dirty:
            formula = data.get(key)
            if formula is None:
                continue
            for name in support(formula):
                bucket = index.get(name)
                if bucket is None:
                    index[name] = {key}
                else:
                    bucket.add(key)
        count = len(dirty)
        if self.dirty is None:
            self.dirty = set()
        else:
            self.dirty.clear()  # in place: a caller may hold it (Fixpoint.process_batch)
        self.scans = 0
        return count

    def mostly_indexed(self) -> bool:
        """Whether at most a quarter of the entries changed since the index was last brought
        up to date (after a restore, none is indexed: every entry is dirty)."""
        return 4 * self.unindexed <= len(self.data)

    def add(self, key: tuple, pv: Formula) -> tuple[Formula | None, Formula]:
        """OR ``pv`` into the entry of ``key``; return (old or None, new)."""
        old = self.data.get(key)
        if old is None:
            self.data[key] = pv
            if self.dirty is not None:
                self.dirty.add(key)
            if self.journal is not None:
                self.note_new(key)
            return None, pv
        if self.implies(pv, old):
            return old, old  # absorbed (tested without building the OR)
        new = old | pv
        self.data[key] = new
        if self.dirty is not None:
            self.dirty.add(key)
        return old, new

    def set(self, key: tuple, formula: Formula) -> None:
        """Replace the entry of ``key`` (``formula`` must not be false)."""
        if self.journal is not None and key not in self.data:
            self.note_new(key)
        self.data[key] = formula
        if self.dirty is not None:
            self.dirty.add(key)

    def pop(self, key: tuple) -> Formula | None:
        """Remove and return the entry of ``key`` (index entries go stale, harmlessly)."""
        old = self.data.pop(key, None)
        if old is not None and self.journal is not None:
            self.journal.setdefault(key, True)
        return old

    def clear(self) -> None:
        if self.journal is not None:
            for key in self.data:
                self.journal.setdefault(key, True)
        self.data.clear()
        self.index.clear()
        self.dirty = None  # no index: every (future) entry is dirty

    def restrict(self, dead: Iterable[str]) -> list[tuple[tuple, Formula, Formula]]:
        """Set the ``dead`` variables to false everywhere (decision 1).

        Returns (key, old, new) for every entry that changed; entries that became false are
        removed from the store (``new`` is then the false formula).
        """
        dead = list(dead)
        keys: set[tuple] = set()
        if self.unindexed and self.scan is not None and not self.mostly_indexed() \
                and self.scans < SCANS_BEFORE_INDEX:
            # a restored store: find the dirty entries that mention a dead variable in one
            # compiled walk, rather than index every entry's support first (they stay dirty)
            self.scans += 1
            dirty = list(self.data) if self.dirty is None else \
                [key for key in self.dirty if key in self.data]
            flags = self.scan([self.data[key] for key in dirty], dead)
            keys.update(key for key, flag in zip(dirty, flags, strict=True) if flag)
        elif self.unindexed:
            self.refresh_index()
        for key in self.keys.of_names(dead):
            bucket = self.index.pop(key, None)
            if bucket:
                keys |= bucket
        if not keys:
            return []
        manager = self.manager
        restrict = restriction(manager, dead)
        false = manager.false
        changed: list[tuple[tuple, Formula, Formula]] = []
        data = self.data
        for key in keys:
            old = data.get(key)
            if old is None:
                continue
            new = restrict(old)
            if new == old:
                continue
            if new == false:
                del data[key]
                if self.journal is not None:
                    self.journal.setdefault(key, True)
            else:
                data[key] = new
            changed.append((key, old, new))
        return changed
