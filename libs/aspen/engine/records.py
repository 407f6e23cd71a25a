"""Update records, the messages between operators: INS/DEL, tuple, provenance.

A DEL carries the **set of deleted base variables** (decision 1, docs/architecture.md): every
stateful operator applies restrict-to-false with them; it never computes ``x ∧ ¬y`` with a
compound y.

>>> u = Update.ins("reachable", ("a", "b"), pv="P")
>>> u.op, u.tuple
('INS', ('a', 'b'))
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

__all__ = ["INS", "DEL", "Update"]

INS: Literal["INS"] = "INS"
DEL: Literal["DEL"] = "DEL"


_NO_VARS: frozenset[str] = frozenset()


class Update(NamedTuple):
    """An element of an update stream (immutable; a named tuple: cheap to build, one is built
    per derivation)."""

    op: Literal["INS", "DEL"]
    relation: str
    tuple: tuple
    pv: Any = None  # a Formula of the receiving manager (INS), or the tuple's last provenance (DEL)
    deleted: frozenset[str] = _NO_VARS  # DEL: the base variables that died

    @classmethod
    def ins(cls, relation: str, values: tuple, pv: Any) -> Update:
        """An insertion (a new derivation) of ``relation(values)`` with provenance ``pv``."""
        return cls("INS", relation, values, pv)

    @classmethod
    def delete(cls, relation: str, values: tuple, deleted: frozenset[str],
               pv: Any = None) -> Update:
        """A deletion of ``relation(values)`` caused by the death of ``deleted`` variables."""
        return cls("DEL", relation, values, pv, frozenset(deleted))
