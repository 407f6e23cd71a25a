"""Symmetric pipelined hash join with provenance (Liu et al. 2008, Algorithm 2, errata fixed).

State per side: ``h`` join key → *set* of tuples, and a provenance store tuple → formula. An INS
on one side ORs into that side's state; if the formula changed it probes the other side and emits
``INS(combine(l, r), u.pv ∧ p_other[t])`` for each match (the semi-naive delta rule: the *incoming*
derivation, not the merged formula). An absorbed derivation emits nothing.

A variable deletion restricts both sides (restrict-to-false, never ``x ∧ ¬y``); with
``cascade_deletes`` it emits a DEL for every output pair of a tuple that died. A retraction removes
one tuple silently. Window hooks (``window_left``/``window_right``, called after every update on
their side, as in Algorithm 2, with ``W_S`` called symmetrically) return expired ``(tuple, vars)``:
those variables are restricted to false in that tuple.

Probing is by key; a side may probe several keys (``probe_left``/``probe_right``), which turns the
join into a grid-bucketed theta join when ``combine`` also checks a predicate (distance < k).

>>> from aspen.provenance import ProvenanceManager
>>> from aspen.engine.records import Update
>>> m = ProvenanceManager(backend="python")
>>> j = PipelinedHashJoin(m, "reachable", left_key=lambda t: t[0], right_key=lambda t: t[1],
...                       combine=lambda r, l: (l[0], r[1]))
>>> j.process("left", Update.ins("reachable", ("b", "c"), m.var("p2")))
[]
>>> out = j.process("right", Update.ins("link", ("a", "b", 1.0), m.var("p1")))
>>> out[0].tuple, out[0].pv == m.and_(m.var("p1"), m.var("p2"))
(('a', 'c'), True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aspen.engine.operators.base import FormulaCodec, Operator
from aspen.engine.operators.store import ProvenanceStore
from aspen.engine.records import INS, Update
from aspen.errors import EngineError
from aspen.provenance.bdd import Formula, ProvenanceManager

__all__ = ["PipelinedHashJoin", "Window", "no_window"]

#: A window hook: (update just processed, that side's tuple → provenance) → expired (tuple, vars).
Window = Callable[[Update, Mapping[tuple, Formula]], Iterable[tuple[tuple, frozenset[str]]]]


def no_window(update: Update, state: Mapping[tuple, Formula]) -> list[tuple[tuple, frozenset[str]]]:
    """The default window: nothing expires (derived inputs, or TTLs handled as base deletions)."""
    return []


class _Side:
    __slots__ = ("name", "key", "probe", "window", "h", "store", "shared")

    def __init__(self, name: str, manager: ProvenanceManager, key: Callable[[tuple], Any],
                 probe: Callable[[tuple], Iterable[Any]] | None, window: Window) -> None:
        self.name = name
        self.key = key
        self.probe = probe
        self.window = window
        self.h: dict[Any, set[tuple]] = {}
        self.store = ProvenanceStore(manager)
        self.shared = False  # the store belongs to the upstream operator (see share_state)

    def keys_to_probe(self, values: tuple) -> Iterable[Any]:
        return (self.key(values),) if self.probe is None else self.probe(values)

    def discard(self, values: tuple) -> None:
        bucket = self.h.get(self.key(values))
        if bucket is not None:
            bucket.discard(values)
            if not bucket:
                del self.h[self.key(values)]


class PipelinedHashJoin(Operator):
    """``left ⋈ right`` producing ``relation`` tuples ``combine(left, right)`` (None = filtered)."""

    kind = "join"

    def __init__(
        self,
        manager: ProvenanceManager,
        relation: str,
        left_key: Callable[[tuple], Any],
        right_key: Callable[[tuple], Any],
        combine: Callable[[tuple, tuple], tuple | None],
        *,
        probe_left: Callable[[tuple], Iterable[Any]] | None = None,
        probe_right: Callable[[tuple], Iterable[Any]] | None = None,
        window_left: Window = no_window,
        window_right: Window = no_window,
        cascade_deletes: bool = True,
    ) -> None:
        super().__init__(manager)
        self.relation = relation
        self.combine = combine
        self.cascade_deletes = cascade_deletes
        self.sides = {
            "left": _Side("left", manager, left_key, probe_left, window_left),
            "right": _Side("right", manager, right_key, probe_right, window_right),
        }

    def _pair(self, side: str, values: tuple, other_values: tuple) -> tuple | None:
        if side == "left":
            return self.combine(values, other_values)
        return self.combine(other_values, values)

    def _matches(self, side: _Side, other: _Side, values: tuple) -> Iterable[tuple]:
        for key in side.keys_to_probe(values):
            bucket = other.h.get(key)
            if bucket:
                yield from bucket

    def share_state(self, port: str, store: ProvenanceStore) -> None:
        """Use ``store`` as side ``port``'s provenance map instead of a copy of it.

        For a side fed only by a co-located operator that keeps exactly that map and emits an
        update whenever an entry changes (a Fixpoint in front of its recursive join): the
        upstream operator maintains the store (ORs, restrictions, retractions) and this side
        only keeps its key index. Probes may then see formulas newer than the updates delivered
        so far: every term is still a derivation, and the update, when it arrives, probes again.
        Only for joins without windows or delete cascades (the runtime's).
        """
        side = self.sides[port]
        if side.window is not no_window or self.cascade_deletes:
            raise EngineError("a join side with a window or delete cascades cannot share state")
        side.store = store
        side.shared = True

    def process(self, port: str, update: Update) -> list[Update]:
        try:
            side = self.sides[port]
        except KeyError:
            raise EngineError(f"join has ports 'left' and 'right', not {port!r}") from None
        other = self.sides["right" if port == "left" else "left"]
        out: list[Update] = []
        values = update.tuple
        if update.op == INS:
            pv = update.pv
            if pv == self.manager.false:
                return out
            if side.shared:  # the owner already OR-ed it in, and sends only changes
                changed = True
                side.h.setdefault(side.key(values), set()).add(values)
            else:
                old, new = side.store.add(values, pv)
                if old is None:
                    side.h.setdefault(side.key(values), set()).add(values)
                changed = old is None or new != old
            if changed:
                other_store = other.store.data
                relation = self.relation
                for match in self._matches(side, other, values):
                    partner = other_store.get(match)
                    if partner is None:
                        continue  # left the shared store; its index entry is stale
                    result = self._pair(port, values, match)
                    if result is not None:
                        out.append(Update(INS, relation, result, pv & partner))
        elif update.deleted:
            out.extend(self.delete_vars(update.deleted))
        elif side.shared:  # retraction: the owner removed it from the store already
            if values not in side.store.data:
                side.discard(values)
        elif side.store.pop(values) is not None:  # retraction: drop silently
            side.discard(values)
        for expired, dead in side.window(update, side.store.data):
            out.extend(self._expire(side, other, expired, frozenset(dead)))
        return out

    def _expire(self, side: _Side, other: _Side, values: tuple,
                dead: frozenset[str]) -> list[Update]:
        old = side.store.get(values)
        if old is None:
            return []
        new = self.manager.restrict_false(old, dead)
        if new == old:
            return []
        if new == self.manager.false:
            side.store.pop(values)
            side.discard(values)
        else:
            side.store.set(values, new)
        return self._cascade(side, other, [values], dead)

    def _cascade(self, side: _Side, other: _Side, changed: list[tuple],
                 dead: frozenset[str]) -> list[Update]:
        if not self.cascade_deletes:
            return []
        out: list[Update] = []
        for values in changed:
            for match in self._matches(side, other, values):
                result = self._pair(side.name, values, match)
                if result is not None:
                    out.append(self._del(self.relation, result, dead))
        return out

    def delete_vars(self, dead: frozenset[str]) -> list[Update]:
        dead = frozenset(dead)
        false = self.manager.false
        out: list[Update] = []
        changed_by_side: dict[str, list[tuple]] = {}
        for name, side in self.sides.items():
            if side.shared:  # restricted by its owner; stale index entries are skipped
                changed_by_side[name] = []
                continue
            changed = side.store.restrict(dead)
            for values, _old, new in changed:
                if new == false:
                    side.discard(values)
            changed_by_side[name] = [values for values, _o, _n in changed]
        for name, changed in changed_by_side.items():
            side = self.sides[name]
            other = self.sides["right" if name == "left" else "left"]
            out.extend(self._cascade(side, other, changed, dead))
        return out

    def side_state(self, port: str) -> dict[tuple, Formula]:
        """The tuple → provenance map of one side (read-only use)."""
        return self.sides[port].store.data

    def stores(self):
        return tuple(side.store for side in self.sides.values())

    def formulas(self):
        for side in self.sides.values():
            yield from side.store.items()

    def dump_state(self, codec: FormulaCodec) -> Any:
        return {name: codec.dump_map(side.store.items()) for name, side in self.sides.items()}

    def load_state(self, state: Any, codec: FormulaCodec) -> None:
        for name, rows in state.items():
            side = self.sides[name]
            for values, f in codec.load_map(rows):
                if not side.shared:
                    side.store.set(values, f)
                side.h.setdefault(side.key(values), set()).add(values)
