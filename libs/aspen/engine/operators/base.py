"""The operator contract shared by Fixpoint, PipelinedHashJoin, MinShip, AggSel and GroupAggregate.

An operator consumes :class:`~aspen.engine.records.Update` records on named ports and returns the
updates it emits, in order. Conventions (design.md "Semantics we decided"):

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
from typing import Any, ClassVar

from aspen.engine.records import DEL, INS, Update
from aspen.provenance.bdd import Formula, ProvenanceManager

__all__ = ["Operator", "FormulaCodec", "is_retraction"]


def is_retraction(update: Update) -> bool:
    """Whether ``update`` is a DEL of one tuple not caused by a variable deletion."""
    return update.op == DEL and not update.deleted


class FormulaCodec:
    """Encodes formulas for :meth:`Operator.dump_state` with sharing: equal formulas once.

    >>> from aspen.provenance import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> c = FormulaCodec(m)
    >>> f = m.var("x")
    >>> c.ref(f) == c.ref(f), len(c.table)
    (True, 1)
    >>> FormulaCodec(m, c.table).formula(c.ref(f)) == f
    True
    """

    def __init__(self, manager: ProvenanceManager, table: list[bytes] | None = None) -> None:
        self.manager = manager
        self.table: list[bytes] = list(table or [])
        self._refs: dict[int, int] = {}
        self._decoded: dict[int, Formula] = {}

    def ref(self, formula: Formula) -> int:
        """The index of ``formula``'s encoding in :attr:`table` (added on first use)."""
        key = int(formula)
        found = self._refs.get(key)
        if found is None:
            found = self._refs[key] = len(self.table)
            self.table.append(self.manager.encode(formula))
        return found

    def formula(self, ref: int) -> Formula:
        """Decode the formula stored at ``ref``."""
        found = self._decoded.get(ref)
        if found is None:
            found = self._decoded[ref] = self.manager.decode(self.table[ref])
        return found

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

    def delete_vars(self, dead: frozenset[str]) -> list[Update]:
        """Restrict every stored formula with ``dead`` := false; return the updates emitted."""
        raise NotImplementedError

    def flush(self) -> list[Update]:
        """Ship whatever is buffered (the MinShip timer); most operators hold nothing."""
        return []

    def pending(self) -> int:
        """How many buffered entries :meth:`flush` would ship."""
        return 0

    def formulas(self) -> Iterable[tuple[tuple, Formula]]:
        """Every (tuple, formula) the operator stores (for the state-size metric)."""
        return ()

    def dump_state(self, codec: FormulaCodec) -> Any:
        """Picklable state with formulas replaced by ``codec`` references."""
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
