"""What the engine consumes: base facts with their provenance variables, grouped in batches.

A base fact is one live insertion instance of a base tuple (decision 4, docs/architecture.md):
the tuple values and the fresh variable that stands for this instance. A batch inserts facts and
deletes variables (a delete or an expiry kills every variable of the tuple it names).

>>> b = Batch(inserts=(BaseFact("link", ("a", "b", 2.0), "v1"),), deletes=frozenset({"v0"}))
>>> b.inserts[0].relation, sorted(b.deletes)
('link', ['v0'])
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BASE_RELATIONS", "BaseFact", "Batch"]

#: Base relations and their tuple layouts (the values carried in ``BaseFact.values``).
BASE_RELATIONS: dict[str, tuple[str, ...]] = {
    "link": ("src", "dst", "cost"),
    "sensor": ("id", "x", "y"),
    "triggered": ("id",),
    "region_seed": ("region", "id"),
}


@dataclass(frozen=True)
class BaseFact:
    """One live insertion instance: ``relation(values…)`` annotated by variable ``var``."""

    relation: str
    values: tuple
    var: str


@dataclass(frozen=True)
class Batch:
    """One maintenance batch: instances inserted and variables deleted (or expired)."""

    inserts: tuple[BaseFact, ...] = ()
    deletes: frozenset[str] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.inserts or self.deletes)
