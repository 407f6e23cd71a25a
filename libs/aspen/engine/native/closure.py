"""The recursive view ``reachable`` in the compiled core: links in, the closure with its
absorption provenance out.

``reachable(x, y) :- link(x, y, _)`` and ``reachable(x, y) :- link(x, z, _) ∧ reachable(z, y)``,
fused into one kernel (``libs/aspen_core``) that keeps the semantics of the Python operators
(:mod:`aspen.engine.operators.fixpoint` and :mod:`~aspen.engine.operators.join`): each entry's
formula is the OR, over every walk, of the AND of the link formulas along it; derivations run
semi-naively to quiescence, an implied derivation is absorbed, and a deletion restricts the
dead variables to false (decision 1) — exact, so nothing is re-derived. The formulas are the
same CUDD nodes the reference runtime builds in the same manager.

**Lazy mode** (``lazy=True``) is the kernel's analogue of a lazy MinShip in front of each entry
(:mod:`aspen.engine.operators.minship`, decision 5): an entry's first derivation is propagated,
a later one that its formula does not imply is buffered, unless the entry still waits in the
worklist (it is then OR-ed into the waiting derivation, as in eager mode). A deletion that
changes an entry's formula ships the entry's buffer (the next :meth:`NativeClosure.run`
propagates it), so membership stays exact; :meth:`NativeClosure.flush` ships every buffer and
runs eagerly to quiescence, after which the formulas are the eager kernel's.

Node ids are interned here (str → u32); a pair is ``(src << 32) | dst``. Formulas cross the
boundary as CUDD node pointers (``int(f) - 2``) and come back wrapped by ``BDD._add_int``,
which references them. Like the compiled forest codec, the calls release the GIL: the manager
must not be used from another thread meanwhile (a runtime's manager is not).

>>> from aspen.provenance import ProvenanceManager
>>> m = ProvenanceManager(backend="cudd")
>>> closure = NativeClosure(m)
>>> closure.add_links([("a", "b", m.var("v1")), ("b", "c", m.var("v2"))])
>>> closure.run() > 0
True
>>> sorted(closure), closure.get(("a", "c")) == m.var("v1") & m.var("v2")
([('a', 'b'), ('a', 'c'), ('b', 'c')], True)
>>> closure.delete_vars(["v2"]), sorted(closure)
(2, [('a', 'b')])
>>> closure.close()

A diamond, lazily: the second path into (a, d) is buffered, and ships when the first one dies.

>>> lazy = NativeClosure(m, lazy=True)
>>> lazy.add_links([("a", "b", m.var("p")), ("b", "d", m.var("r")),
...                 ("a", "c", m.var("q")), ("c", "d", m.var("s"))])
>>> _ = lazy.run()
>>> lazy.pending_alternatives(), lazy.get(("a", "d")) == m.var("q") & m.var("s")
(1, True)
>>> _ = lazy.delete_vars(["s"]); _ = lazy.run()
>>> lazy.get(("a", "d")) == m.var("p") & m.var("r"), lazy.pending_alternatives()
(True, 0)
>>> lazy.close()
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from aspen.engine.native.kernel import NativeKernel
from aspen.errors import EngineError
from aspen.provenance.bdd import Formula, ProvenanceManager

__all__ = ["STATS", "ClosureBacked", "NativeClosure"]

#: The counters :meth:`NativeClosure.stats` reports, in the core's order.
STATS = ("derivations", "absorbed", "restricted", "entries", "links", "links_restricted",
         "indexed", "pending", "failed", "buffered", "shipped", "alternatives")

_CLOSURE, _LINKS = 0, 1
_LOW = 0xFFFFFFFF

Key = tuple[str, str]


@contextmanager
def _no_gc() -> Iterator[None]:
    """Python's cyclic collector paused while millions of keys and formulas are made: each of
    its passes would walk every object made so far (measured: 1 M items in 4.0 s, not 1.2)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class NativeClosure(NativeKernel):
    """reachable over links with absorption provenance, in the compiled core (one per
    runtime, one manager: formulas in and out belong to ``manager``). ``lazy`` buffers the
    alternatives of each entry until a deletion needs them or :meth:`flush`."""

    new_function = "aspen_core_new"
    free_function = "aspen_core_free"

    def __init__(self, manager: ProvenanceManager, lazy: bool = False) -> None:
        super().__init__(manager)
        handle = self._live()
        self.lazy = lazy
        if lazy:
            self._check(self._lib.aspen_core_set_lazy(handle, 1))

    # -- ids ---------------------------------------------------------------------------------
    def _key(self, key: Key) -> int | None:
        """The pair key of ``key``, or None when a node was never seen."""
        src, dst = self._ids.get(key[0]), self._ids.get(key[1])
        if src is None or dst is None:
            return None
        return (src << 32) | dst

    # -- updates -----------------------------------------------------------------------------
    def add_link(self, src: str, dst: str, formula: Formula) -> None:
        """OR ``formula`` into the link (src, dst); its derivations are queued for :meth:`run`."""
        self.add_links(((src, dst, formula),))

    def add_links(self, links: Iterable[tuple[str, str, Formula]]) -> None:
        """:meth:`add_link` for many links in one call."""
        handle = self._live()
        packed = self._pack((((src, dst), f) for src, dst, f in links), "link ")
        if packed is not None:
            count, key_array, node_array, _held = packed
            self._check(self._lib.aspen_core_add_links(handle, count, key_array, node_array))

    def add_targets(self, names: Iterable[Any]) -> None:
        """Keep only the entries whose destination is one of the targets named so far (targets
        mode, from the first call on, even with no name; name a target before the links into
        it), derived breadth-first. With every edge reversed this is the closure from a few
        sources: the region family's (:class:`~aspen.engine.native.NativeRegions`), whose cost
        follows its rows."""
        ids = [self._id(name) for name in names]
        self._check(self._lib.aspen_core_targets(self._live(), len(ids),
                                                 (ctypes.c_uint32 * max(len(ids), 1))(*ids)))

    def delete_vars(self, dead: Iterable[str]) -> int:
        """Set the ``dead`` variables to false in every link and closure formula, dropping the
        entries that become false (names the manager never declared are ignored); returns how
        many closure entries changed."""
        return self._delete("aspen_core_delete", dead)

    def run(self) -> int:
        """Derive to quiescence and index the entries changed; returns derivations processed."""
        return self._check(self._lib.aspen_core_run(self._live()))

    def flush(self) -> int:
        """Ship every buffered alternative and derive eagerly to quiescence (nothing is
        buffered meanwhile): every formula is then the full provenance, the eager kernel's.
        Returns the derivations processed (a no-op in eager mode: nothing is buffered)."""
        return self._check(self._lib.aspen_core_flush(self._live()))

    def pending_alternatives(self) -> int:
        """How many entries hold a buffered alternative (lazy mode; 0 after :meth:`flush`)."""
        return self._check(self._lib.aspen_core_alternatives(self._live()))

    def buffered_items(self) -> Iterator[tuple[Key, Formula]]:
        """Every (key, buffered alternative) of the closure (lazy mode), for state dumps: the
        entry's formula OR its buffer is what it has received."""
        handle = self._live()
        count = self.pending_alternatives()
        if not count:
            return iter(())
        with _no_gc():
            key_array = (ctypes.c_uint64 * count)()
            node_array = (ctypes.c_uint64 * count)()
            written = self._check(self._lib.aspen_core_buffered(handle, key_array, node_array,
                                                                count))
            keys = self._pairs(np.frombuffer(key_array, dtype=np.uint64, count=written))
            # wrapped before any other CUDD call: the core's references keep them alive
            pointers = (np.frombuffer(node_array, dtype=np.uint64, count=written) + 2).tolist()
            return iter(list(zip(keys, map(self._wrap, pointers), strict=True)))

    def set(self, key: Key, formula: Formula) -> None:
        """Restore the closure entry ``key`` (a state load; nothing is derived)."""
        self.set_many(((key, formula),))

    def set_many(self, entries: Iterable[tuple[Key, Formula]]) -> None:
        """:meth:`set` for many entries in one call (a key given twice keeps the last)."""
        self._set(_CLOSURE, entries)

    def set_links(self, links: Iterable[tuple[str, str, Formula]]) -> None:
        """Restore links (a state load: their derivations are already in the closure, nothing
        is derived); the instances of one key, and a link already held, OR together."""
        merged: dict[Key, Formula] = {}
        for src, dst, formula in links:
            key = (src, dst)
            old = merged.get(key)
            if old is None:
                old = self.get_link(key)
            merged[key] = formula if old is None else old | formula
        self._set(_LINKS, merged.items())

    def _set(self, table: int, entries: Iterable[tuple[Key, Formula]]) -> None:
        handle = self._live()
        false, bdd = self.manager.false, self.manager.bdd
        checked = []
        for (src, dst), formula in entries:
            if formula.bdd is bdd and formula == false:
                raise EngineError(f"cannot store ({src!r}, {dst!r}) with a false formula")
            checked.append(((src, dst), formula))
        packed = self._pack(checked, "")
        if packed is not None:
            count, key_array, node_array, _held = packed
            self._check(self._lib.aspen_core_set(handle, table, count, key_array, node_array))

    def _pack(self, entries: Iterable[tuple[Key, Formula]], what: str
              ) -> tuple[int, Any, Any, list[Formula]] | None:
        """The keys and node pointers of ``entries`` as C arrays (None when there are none),
        with the formulas, which the caller holds so that every node stays referenced during
        its call; a formula of another manager is refused."""
        ident = self._id
        bdd = self.manager.bdd
        keys: list[int] = []
        formulas: list[Formula] = []
        for (src, dst), formula in entries:
            if formula.bdd is not bdd:
                raise EngineError(f"{what}({src!r}, {dst!r}): a formula of another BDD manager")
            keys.append((ident(src) << 32) | ident(dst))
            formulas.append(formula)
        if not keys:
            return None
        count = len(keys)
        key_array = (ctypes.c_uint64 * count)(*keys)
        node_array = (ctypes.c_void_p * count)(*[int(f) - 2 for f in formulas])
        return count, key_array, node_array, formulas

    def index(self) -> int:
        """Bring the deletion index up to date; returns the entries indexed."""
        return self._check(self._lib.aspen_core_index(self._live()))

    # -- reads -------------------------------------------------------------------------------
    def get(self, key: Key) -> Formula | None:
        """The formula of reachable ``key``, or None when it is not in the view."""
        return self._get(_CLOSURE, key)

    def get_link(self, key: Key) -> Formula | None:
        """The formula of link ``key`` (the OR of its live instances), or None."""
        return self._get(_LINKS, key)

    def _get(self, table: int, key: Key) -> Formula | None:
        handle = self._live()
        pair = self._key(key)
        if pair is None:
            return None
        node = self._lib.aspen_core_get(handle, table, pair)
        return None if not node else self._wrap(node + 2)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        pair = self._key(key)  # type: ignore[arg-type]
        return pair is not None and bool(self._lib.aspen_core_get(self._live(), _CLOSURE, pair))

    def __len__(self) -> int:
        return self._check(self._lib.aspen_core_len(self._live(), _CLOSURE))

    def __iter__(self) -> Iterator[Key]:
        with _no_gc():
            keys, _ = self._fetch(_CLOSURE, nodes=False)
        return iter(keys)

    def items(self) -> Iterator[tuple[Key, Formula]]:
        """Every (key, formula) of the closure (fetched and wrapped at once, in bulk)."""
        return iter(self._items(_CLOSURE))

    def link_items(self) -> Iterator[tuple[Key, Formula]]:
        """Every (link key, formula)."""
        return iter(self._items(_LINKS))

    def _items(self, table: int) -> list[tuple[Key, Formula]]:
        with _no_gc():
            keys, formulas = self._fetch(table, nodes=True)
            return list(zip(keys, formulas, strict=True))

    def _fetch(self, table: int, nodes: bool) -> tuple[list[Key], list[Formula]]:
        handle = self._live()
        count = self._check(self._lib.aspen_core_len(handle, table))
        if not count:
            return [], []
        key_array = (ctypes.c_uint64 * count)()
        node_array = (ctypes.c_uint64 * count)() if nodes else None
        written = self._check(self._lib.aspen_core_items(handle, table, key_array, node_array,
                                                         count))
        keys = self._pairs(np.frombuffer(key_array, dtype=np.uint64, count=written))
        if node_array is None:
            return keys, []
        # wrapped before any other CUDD call: the core's references keep them alive until then
        pointers = (np.frombuffer(node_array, dtype=np.uint64, count=written) + 2).tolist()
        return keys, list(map(self._wrap, pointers))

    def _pairs(self, keys: Any) -> list[Key]:
        names = np.array(self._names, dtype=object)
        srcs = names[(keys >> np.uint64(32)).astype(np.int64)].tolist()
        dsts = names[(keys & np.uint64(_LOW)).astype(np.int64)].tolist()
        return list(zip(srcs, dsts, strict=True))

    # -- membership tracking -----------------------------------------------------------------
    def track_membership(self) -> None:
        """Start recording the closure keys that enter or leave (as
        :meth:`aspen.engine.operators.store.ProvenanceStore.track_membership`)."""
        self._check(self._lib.aspen_core_track(self._live(), 1))

    def membership_changes(self) -> dict[tuple, bool]:
        """Stop tracking; return key → whether it was present when tracking started, for every
        key that entered or left meanwhile (it may have come back: compare with the closure)."""
        handle = self._live()
        count = self._check(self._lib.aspen_core_journal_len(handle))
        key_array = (ctypes.c_uint64 * max(count, 1))()
        flags = (ctypes.c_uint8 * max(count, 1))()
        written = self._check(self._lib.aspen_core_take_journal(handle, key_array, flags, count))
        if not written:
            return {}
        with _no_gc():
            keys = self._pairs(np.frombuffer(key_array, dtype=np.uint64, count=written))
            return dict(zip(keys, map(bool, flags[:written]), strict=True))

    # -- counters and lifetime ---------------------------------------------------------------
    def stats(self) -> dict[str, int]:
        """The core's counters: derivations, absorbed, restricted (closure entries changed by
        deletions), entries, links, links_restricted, indexed, pending, failed, buffered
        (derivations buffered in lazy mode), shipped (buffers propagated by a deletion or a
        flush), alternatives (entries holding a buffer now)."""
        out = (ctypes.c_int64 * len(STATS))()
        written = self._check(self._lib.aspen_core_stats(self._live(), out, len(STATS)))
        return dict(zip(STATS[:written], out[:written], strict=True))


class ClosureBacked:
    """The batch calls of a view kept by one :class:`NativeClosure` (``self.closure``), as the
    in-process runtime makes them on each kernel: run, flush, pending, index, membership."""

    closure: NativeClosure

    def run(self) -> int:
        return self.closure.run()

    def flush(self) -> int:
        """Ship every buffered alternative and run eagerly (the full provenance)."""
        return self.closure.flush()

    def pending(self) -> int:
        """Entries holding a buffered alternative (lazy mode)."""
        return self.closure.pending_alternatives()

    def index(self) -> int:
        return self.closure.index()

    def track_membership(self) -> None:
        self.closure.track_membership()

    def delete_vars(self, dead: Iterable[str]) -> int:
        return self.closure.delete_vars(dead)
