"""A formula codec whose numbering outlives one dump: each dump encodes only the new formulas.

A query node of the Spark runtime dumps its state after every round it takes part in. With a
:class:`~aspen.engine.operators.base.FormulaCodec` every dump re-encodes every formula of the
node (its whole share of every view), so a one-link deletion cost as much as encoding the view.
:class:`SegmentedCodec` lives as long as the node: a formula keeps the number it got in an earlier
dump, and :meth:`SegmentedCodec.flush` appends one forest *segment* holding only the formulas
numbered since the last flush. The state bytes are the list of segments plus the operators'
(small) structures of tuples and numbers, so the BDD work of a dump is proportional to what
changed.

Formulas that are no longer referenced stay in their segments until garbage outgrows the live
formulas; then :meth:`needs_compaction` says so and the node dumps once through a fresh codec
(one segment with the live formulas only) — amortised, a constant factor per change.

>>> from aspen.provenance import ProvenanceManager
>>> m = ProvenanceManager(backend="python")
>>> codec = SegmentedCodec(m)
>>> x, y = m.var("x"), m.var("y")
>>> codec.ref(x), codec.ref(x | y), len(codec.flush())
(0, 1, 1)
>>> codec.ref(x), len(codec.flush())            # known formulas: no new segment
(0, 1)
>>> _ = codec.ref(x & y); segments = codec.flush()
>>> [len(SegmentedCodec(ProvenanceManager(backend="python"), segments).roots)]
[3]
"""

from __future__ import annotations

from collections.abc import Sequence

from aspen.engine.operators.base import FormulaCodec
from aspen.provenance.bdd import Formula, ProvenanceManager, decode_forest, encode_forest

__all__ = ["SegmentedCodec"]

#: Garbage (unreferenced numbered formulas) tolerated before a compaction: this many plus the
#: number of live formulas.
COMPACTION_SLACK = 1024


class SegmentedCodec(FormulaCodec):
    """Formula numbers stable across dumps; :meth:`flush` exports only the new formulas."""

    def __init__(self, manager: ProvenanceManager, segments: Sequence[bytes] = ()) -> None:
        super().__init__(manager)
        self.segments: list[bytes] = []
        for segment in segments:
            for formula in decode_forest(manager, segment):
                self._refs.setdefault(formula, len(self.roots))
                self.roots.append(formula)
            self.segments.append(bytes(segment))
        self._exported = len(self.roots)
        #: number → 1 when the current dump has referenced it: one byte per numbered formula,
        #: far less than a set of numbers (measurements: docs/performance.md)
        self._live = bytearray(len(self.roots))

    @classmethod
    def extending(cls, known: SegmentedCodec, segments: Sequence[bytes],
                  order: Sequence[str]) -> SegmentedCodec | None:
        """A codec for ``segments`` that takes over ``known`` (its manager and decoded formulas)
        when ``known``'s segments are a prefix of ``segments``; only the other segments are
        decoded. None when it does not apply. ``known`` must not be used afterwards.

        Variables of ``order`` (the variable order the state was dumped with) that ``known``'s
        manager lacks are declared at its bottom, in that order; the manager's own order is
        kept, since it may be shared with other nodes (:class:`~aspen.runtime.rounds.NodeCache`)
        and reordering never changes a function, only its size.

        >>> from aspen.provenance import ProvenanceManager
        >>> m = ProvenanceManager(backend="python")
        >>> old = SegmentedCodec(m); _ = old.ref(m.var("x")); first = old.flush()
        >>> _ = old.ref(m.var("x") & m.var("y")); both = old.flush()
        >>> stale = SegmentedCodec(ProvenanceManager(backend="python"), first)
        >>> warm = SegmentedCodec.extending(stale, both, ["x", "y"])
        >>> len(warm.roots), SegmentedCodec.extending(warm, both[1:], ["x", "y"]) is None
        (2, True)
        """
        count = len(known.segments)
        if count > len(segments) or known._exported != len(known.roots) \
                or any(a != b for a, b in zip(known.segments, segments, strict=False)):
            return None
        manager = known.manager
        for name in order:
            if not manager.has_var(name):
                manager.var(name)  # declared at the bottom, in the recorded order
        codec = cls(manager)
        codec.roots, codec._refs = known.roots, known._refs
        codec.segments = list(known.segments)
        for segment in segments[count:]:
            for formula in decode_forest(manager, segment):
                codec._refs.setdefault(formula, len(codec.roots))
                codec.roots.append(formula)
            codec.segments.append(bytes(segment))
        codec._exported = len(codec.roots)
        codec._live = bytearray(len(codec.roots))
        return codec

    def begin_dump(self) -> None:
        """Start counting which numbers the coming dump references."""
        self._live = bytearray(len(self.roots))

    def live_numbers(self) -> bytes:
        """The numbers the current dump has referenced so far, as marks (byte ``n`` is 1 when
        number ``n`` was referenced); a copy, for :meth:`mark_live`."""
        return bytes(self._live)

    def mark_live(self, numbers: bytes) -> None:
        """Count the numbers :meth:`live_numbers` marked as referenced by the current dump
        (parts of an earlier dump that are reused unchanged; see :meth:`NodeRuntime.dump`)."""
        size = len(self._live)
        either = int.from_bytes(self._live, "little") | int.from_bytes(numbers, "little")
        self._live = bytearray(either.to_bytes(size, "little"))  # marks are 0 or 1: OR is union

    def ref(self, formula: Formula) -> int:
        """The stable number of ``formula`` (a new one is exported by the next flush)."""
        number = self._refs.get(formula)
        if number is None:  # numbered now: appended, and live
            number = self._refs[formula] = len(self.roots)
            self.roots.append(formula)
            self._live.append(1)
        elif not self._live[number]:
            self._live[number] = 1
        return number

    def formula(self, ref: int) -> Formula:
        """The formula numbered ``ref``."""
        return self.roots[ref]

    def needs_compaction(self) -> bool:
        """Whether the last dump referenced too few of the numbered formulas to keep them all."""
        return len(self.roots) > 2 * self._live.count(1) + COMPACTION_SLACK

    def flush(self) -> list[bytes]:
        """Encode the formulas numbered since the last flush as one more segment; all segments."""
        if len(self.roots) > self._exported:
            self.segments.append(encode_forest(self.roots[self._exported:]))
            self._exported = len(self.roots)
        return list(self.segments)

    def export(self) -> bytes:  # pragma: no cover - the whole-forest API does not apply here
        raise NotImplementedError("a SegmentedCodec exports segments: use flush()")
