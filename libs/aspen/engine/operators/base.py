"""The operator contract shared by Fixpoint, PipelinedHashJoin, MinShip, AggSel and GroupAggregate.

An operator consumes :class:`~aspen.engine.records.Update` records on named ports and returns the
updates it emits, in order. Conventions (the decisions of docs/architecture.md):

* ``INS`` carries one derivation's provenance ``pv``; operators OR it into their state and emit
  the *incoming* derivation's provenance (decision 3, monotone).
* ``DEL`` with a non-empty ``deleted`` set is a variable deletion: the operator restricts its whole
  state with :meth:`Operator.delete_vars` (restrict-to-false, decision 1). ``DEL`` with an empty
  ``deleted`` set is a *retraction* of that one tuple (AggSel displacing a former best, a group
  aggregate replacing its value); it is not caused by a base deletion.
* :meth:`Operator.flush` is the timer: operators that buffer (MinShip) ship what they hold.

>>> from aspen.engine.records import Update
>>> is_retraction(Update.delete("r", ("a",), frozenset()))
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from aspen.engine.records import DEL, INS, Update
from aspen.provenance.bdd import Formula, ProvenanceManager, decode_forest, encode_forest

if TYPE_CHECKING:
    from aspen.engine.operators.store import ProvenanceStore

__all__ = ["Operator", "FormulaCodec", "coalesce_updates", "is_retraction"]


def is_retraction(update: Update) -> bool:
    """Whether ``update`` is a DEL of one tuple not caused by a variable deletion."""
    return update.op == DEL and not update.deleted


def coalesce_updates(updates: Iterable[tuple[str, Update]]) -> list[tuple[str, Update]]:
    """Merge the INS of the same tuple on the same port into the first one (the OR of the
    derivations), unless a DEL of that tuple (or a variable deletion) came in between; other
    updates keep their order.

    >>> from aspen.provenance import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> x, y = m.var("x"), m.var("y")
    >>> out = coalesce_updates([("in", Update.ins("r", ("a",), x)),
    ...                         ("in", Update.ins("r", ("b",), y)),
    ...                         ("in", Update.ins("r", ("a",), y))])
    >>> [(u.tuple, u.pv == m.or_(x, y) if u.tuple == ("a",) else u.pv == y) for _p, u in out]
    [(('a',), True), (('b',), True)]
    """
    out: list[tuple[str, Update]] = []
    at: dict[tuple[str, tuple], int] = {}
    for port, update in updates:
        if update.op == INS:
            key = (port, update.tuple)
            index = at.get(key)
            if index is None:
                at[key] = len(out)
                out.append((port, update))
            else:
                first = out[index][1]
                out[index] = (port, Update(INS, first.relation, first.tuple, first.pv | update.pv))
        else:
            if update.deleted:
                at.clear()
            else:
                at.pop((port, update.tuple), None)
            out.append((port, update))
    return out


class FormulaCodec:
    """Encodes the formulas of an operator-state dump as one forest: each shared BDD node once.

    While dumping, :meth:`ref` numbers the formulas (equal ones once) and :meth:`export` encodes
    them all; while loading, :meth:`formula` decodes the forest on first use.

    >>> from aspen.provenance import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> c = FormulaCodec(m)
    >>> f = m.var("x")
    >>> c.ref(f) == c.ref(f), len(c.roots)
    (True, 1)
    >>> FormulaCodec(m, c.export()).formula(c.ref(f)) == f
    True
    """

    def __init__(self, manager: ProvenanceManager, data: bytes | None = None) -> None:
        self.manager = manager
        self.roots: list[Formula] = []
        #: formula → its number; keyed by the formula itself (hashed by its BDD node, which
        #: canonicity makes one per function), not by ``int(formula)``: no int object per entry
        self._refs: dict[Formula, int] = {}
        self._data = data
        self._decoded: list[Formula] | None = None

    def ref(self, formula: Formula) -> int:
        """The number of ``formula`` in this dump (assigned on first use)."""
        found = self._refs.get(formula)
        if found is None:
            found = self._refs[formula] = len(self.roots)
            self.roots.append(formula)
        return found

    def export(self) -> bytes:
        """Every formula numbered so far, as one forest encoding."""
        return encode_forest(self.roots)

    def formula(self, ref: int) -> Formula:
        """The formula numbered ``ref`` in the loaded dump."""
        if self._decoded is None:
            self._decoded = decode_forest(self.manager, self._data or b"")
        return self._decoded[ref]

    def dump_map(self, items: Iterable[tuple[tuple, Formula]]) -> list[tuple[tuple, int]]:
        return [(key, self.ref(f)) for key, f in items]

    def load_map(self, rows: Iterable[tuple[tuple, int]]) -> list[tuple[tuple, Formula]]:
        return [(key, self.formula(ref)) for key, ref in rows]


class Operator:
    """Base class: subclasses implement ``process`` and ``delete_vars``."""

    kind: ClassVar[str] = "operator"

    def __init__(self, manager: ProvenanceManager) -> None:
        self.manager = manager

    def process(self, port: str, update: Update) -> list[Update]:
        """Consume one update arriving on ``port``; return the updates emitted."""
        raise NotImplementedError

    def process_batch(self, updates: list[tuple[str, Update]]) -> list[Update]:
        """Consume updates delivered together (``(port, update)`` in arrival order); return the
        outputs in order. By default each is processed in turn (derivations meet the state one
        by one, so absorption by the state happens before any OR between them)."""
        out: list[Update] = []
        process = self.process
        for port, update in updates:
            emitted = process(port, update)
            if emitted:
                out.extend(emitted)
        return out

    def delete_vars(self, dead: frozenset[str]) -> list[Update]:
        """Restrict every stored formula with ``dead`` := false; return the updates emitted."""
        raise NotImplementedError

    def flush(self) -> list[Update]:
        """Ship whatever is buffered (the MinShip timer); most operators hold nothing."""
        return []

    def pending(self) -> int:
        """How many buffered entries :meth:`flush` would ship."""
        return 0

    def stores(self) -> Iterable[ProvenanceStore]:
        """The provenance stores the operator keeps (to index them ahead of deletions)."""
        return ()

    def formulas(self) -> Iterable[tuple[tuple, Formula]]:
        """Every (tuple, formula) the operator stores (for the state-size metric)."""
        return ()

    def dump_state(self, codec: FormulaCodec) -> Any:
        """Picklable state with formulas replaced by ``codec`` references. It may share the
        operator's own structures (no copies): callers pickle it before the next update."""
        raise NotImplementedError

    def load_state(self, state: Any, codec: FormulaCodec) -> None:
        """Restore what :meth:`dump_state` returned (into a freshly built operator)."""
        raise NotImplementedError

    # helpers for subclasses
    @staticmethod
    def _ins(relation: str, values: tuple, pv: Formula) -> Update:
        return Update(INS, relation, values, pv)

    @staticmethod
    def _del(relation: str, values: tuple, dead: frozenset[str] = frozenset()) -> Update:
        return Update(DEL, relation, values, None, dead)


KeyFn = Callable[[tuple], Any]
