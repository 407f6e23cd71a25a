"""One query-processing node of a partitioned run: the engine's operators for one partition.

The Spark runtime (:mod:`aspen.pipeline.maintain_spark`) runs one :class:`NodeRuntime` per
partition and round: it restores the node from its state bytes, kills the batch's dead variables
(round 0), inserts the base facts the node owns (round 0), delivers the messages other nodes sent
it, runs its operators to local quiescence, and returns what it must send elsewhere (its
*outbox*) together with its new state bytes. Routing, coalescing and the operators are those of
:class:`~aspen.runtime.local.LocalRuntime` — a node is a LocalRuntime that owns one partition and
posts messages for the others to its outbox instead of delivering them.

Messages cross nodes as bytes (:func:`encode_messages`): the updates a node sends another in
one step travel together, their provenance as one BDD forest (variable names, not manager ids),
so the receiver rebuilds them in its own BDD manager and a BDD node shared by several formulas
is encoded once. The nodes one process restores share one manager
(:class:`~aspen.runtime.rounds.NodeCache`): a formula several of them hold is stored once.

>>> from aspen.engine.batch import BaseFact
>>> a, b = NodeRuntime(0, partitions=2, backend="python"), NodeRuntime(1, partitions=2,
...                                                                    backend="python")
>>> a.insert(BaseFact("link", ("x", "y", 1.0), "v1")) if a.owns("x") else b.insert(
...     BaseFact("link", ("x", "y", 1.0), "v1"))
>>> sorted(len(n.run()) >= 0 for n in (a, b))
[True, True]
"""

from __future__ import annotations

import contextlib
import gc
import pickle
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from aspen import state_pickle
from aspen.engine.batch import BaseFact
from aspen.engine.partitioning import owner
from aspen.engine.plan import PlanChoices
from aspen.engine.records import INS, Update
from aspen.engine.segmented_codec import SegmentedCodec
from aspen.errors import EngineError
from aspen.provenance.bdd import Formula, ProvenanceManager, decode_forest, encode_forest
from aspen.runtime.local import LocalRuntime, read_state_payload

__all__ = ["Message", "NodeRuntime", "OutboxEntry", "ViewChanges", "collection_paused",
           "decode_messages", "encode_messages"]

#: 2: formulas in segments of a :class:`SegmentedCodec`; published rows kept as formulas.
#: 3: the operators' part pickled on its own (bytes in the payload), so that a node can keep it
#: for reuse at the cost of its bytes rather than of the Python lists it was made of.
_NODE_STATE_VERSION = 3

#: State versions :meth:`NodeRuntime.load` reads (a lake maintained before keeps its states).
_READABLE_VERSIONS = (2, 3)

#: A view's changes on one node since it last published: (upserted rows, deleted tuples).
ViewChanges = tuple[list[tuple[tuple, Formula | None]], list[tuple]]

#: A message for another node: (destination node, operator, port, update).
Message = tuple[int, str, str, Update]

#: A message waiting in a node's outbox, as a :data:`Message`'s items in a list: a later
#: insertion of the same tuple on the same channel ORs its formula into the queued update
#: in place (one message per tuple and channel).
OutboxEntry = list[Any]


#: The first item of :func:`encode_messages` bytes, their format version (a single message as
#: Aspen wrote them before is a 7-tuple whose first item is an operator name).
_BUNDLE = 1


def encode_messages(messages: Sequence[tuple[str, str, Update]],
                    manager: ProvenanceManager) -> bytes:
    """The bytes of the ``(operator, port, update)`` messages one node sends another in one step,
    in order: the updates without their formulas, and the formulas as one forest
    (:func:`~aspen.provenance.bdd.encode_forest`: a BDD node shared by several is encoded once,
    and a CUDD manager decodes it in compiled code). Measured on a 100-link insertion into a
    500-node ``reachable``: encoding and decoding formula by formula was ≈90 % of the rounds.

    >>> m = ProvenanceManager(backend="python")
    >>> x, y = m.var("x"), m.var("y")
    >>> data = encode_messages([("r.fix", "base", Update.ins("r", ("a", "b"), m.or_(x, y))),
    ...                         ("r.fix", "base", Update.delete("r", ("a", "c"), {"z"}))], m)
    >>> m2 = ProvenanceManager(backend="python")
    >>> [(u.op, u.tuple, u.pv and sorted(m2.support(u.pv)), sorted(u.deleted))
    ...  for _target, _port, u in decode_messages(data, m2)]
    [('INS', ('a', 'b'), ['x', 'y'], []), ('DEL', ('a', 'c'), None, ['z'])]
    """
    formulas = [u.pv for _target, _port, u in messages if u.pv is not None]
    records = tuple((target, port, u.op, u.relation, u.tuple, u.pv is not None, tuple(u.deleted))
                    for target, port, u in messages)
    forest = encode_forest(formulas) if formulas else b""
    return pickle.dumps((_BUNDLE, records, forest), protocol=pickle.HIGHEST_PROTOCOL)


def decode_messages(data: bytes, manager: ProvenanceManager) -> list[tuple[str, str, Update]]:
    """Rebuild the ``(operator, port, update)`` messages of :func:`encode_messages` bytes in
    ``manager``; also reads a single message as Aspen wrote them before (a node's journal may
    hold such rounds)."""
    record = state_pickle.loads(data, "round messages")
    if record[0] != _BUNDLE:
        target, port, op, relation, values, pv, deleted = record
        formula = None if pv is None else manager.decode(pv)
        return [(target, port, Update(op, relation, values, formula, frozenset(deleted)))]
    _tag, records, forest = record
    formulas = iter(decode_forest(manager, forest) if forest else ())
    return [(target, port, Update(op, relation, values, next(formulas) if has_pv else None,
                                  frozenset(deleted)))
            for target, port, op, relation, values, has_pv, deleted in records]


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a restore allocates millions of tuples and none of
    them is garbage, yet each full collection would walk them all.

    >>> with collection_paused():
    ...     gc.isenabled()
    False
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class NodeRuntime(LocalRuntime):
    """The operators of partition ``me`` out of ``partitions``; messages for other partitions
    go to :attr:`outbox` (coalesced per channel like the local runtime's channels)."""

    def __init__(self, me: int, partitions: int, views: Iterable[str] = ("reachable",),
                 backend: str | None = None, *, choices: PlanChoices | None = None,
                 manager: ProvenanceManager | None = None) -> None:
        super().__init__(views=views, partitions=partitions, backend=backend,
                         measure_bytes=False, choices=choices, manager=manager,
                         core="reference")  # a partition of a distributed run
        if not 0 <= me < partitions:
            raise EngineError(f"node {me} is not one of the {partitions} partitions")
        self.me = me
        self.outbox: list[OutboxEntry] = []
        self._outbox_ins: dict[tuple, OutboxEntry] = {}
        #: view → the rows this node last published (tuple → formula or None)
        self.published: dict[str, dict[tuple, Formula | None]] = {}
        #: view → tuple → bytes of the provenance last published for it (kept by publish_node)
        self.published_bytes: dict[str, dict[tuple, int]] = {}
        self._codec = SegmentedCodec(self.manager)  # formula numbers kept across dumps
        #: the operators' part of the last dump (codec, its pickled bytes, the marks of the
        #: numbers it referenced), valid until the operators change: the publish dump after the
        #: last round reuses it (once)
        self._ops_dump: tuple[SegmentedCodec, bytes, bytes] | None = None
        #: restored by :meth:`load` from an earlier restoration's formulas (a *warm* load)
        self.loaded_warm = False

    # -- what the Spark round calls --------------------------------------------------------
    def owns(self, value: Any) -> bool:
        """Whether a base fact whose first value is ``value`` enters at this node."""
        return owner(value, self.partitions) == self.me

    def kill(self, dead: frozenset[str]) -> None:
        """Restrict this node's state with the dead variables (decisions 1-2)."""
        if not dead:
            return
        self._ops_dump = None
        ops = self.nodes[self.me]
        for name in self._op_order:
            outs = ops[name].delete_vars(dead)
            if outs:
                self._route(self.me, name, outs)

    def insert(self, fact: BaseFact) -> None:
        """Insert one base fact owned by this node (it enters through the plan's sources)."""
        if not self.owns(fact.values[0]):
            raise EngineError(f"fact {fact} does not belong to node {self.me}")
        self._insert(fact)

    def receive(self, src: int, target: str, port: str, update: Update) -> None:
        """Queue a message that node ``src`` sent to this node."""
        super()._post(src, self.me, target, port, update)

    def run(self, flush: bool = False) -> list[OutboxEntry]:
        """Run to local quiescence (in eager mode, or with ``flush``, firing the MinShip timer
        until nothing is buffered) and return the outbox, emptied:
        ``[dst, target, port, update]``."""
        self._drain()
        if flush or self.choices.mode == "eager":
            while self._fire_timer():
                self._drain()
        out, self.outbox, self._outbox_ins = self.outbox, [], {}
        return out

    def has_pending(self) -> bool:
        """Whether a MinShip buffer holds something (the node must take part in a flush round)."""
        return any(op.pending() for op in self.nodes[self.me].values())

    def published_totals(self) -> tuple[int, int]:
        """(view rows, provenance bytes) this node has published, over all its views."""
        sizes = self.published_bytes.values()
        return sum(len(s) for s in sizes), sum(sum(s.values()) for s in sizes)

    def view_rows(self, view: str) -> dict[tuple, Any]:
        """This node's share of ``view`` (tuples → formula or None)."""
        return self.view(view)

    def view_changes(self) -> dict[str, ViewChanges]:
        """Per view, the rows whose formula changed or that appeared since the last call, and
        the tuples that left; the node then remembers the current rows as published.

        Formulas are compared in this node's manager (canonical BDDs: equal functions are the
        same node), so the work is a walk of the node's share and an encoding of what changed.
        """
        changes: dict[str, ViewChanges] = {}
        for view in self.views:
            current = self.view_rows(view)
            before = self.published.get(view, {})
            upserts = [(values, formula) for values, formula in current.items()
                       if values not in before or before[values] != formula]
            deletes = [values for values in before if values not in current]
            if upserts or deletes:
                changes[view] = (upserts, deletes)
                self.published[view] = dict(current)
        return changes

    # -- where operator state changes (besides kill): the dumped operators' part goes stale --
    def _drain(self) -> None:
        self._ops_dump = None
        super()._drain()

    def _fire_timer(self) -> bool:
        self._ops_dump = None
        return super()._fire_timer()

    # -- routing: other partitions go to the outbox ------------------------------------------
    def _post(self, src: int, dst: int, target: str, port: str, update: Update) -> None:
        if dst == self.me:
            super()._post(src, dst, target, port, update)
            return
        key = (dst, target, port, update.tuple)
        if update.op == INS:
            queued = self._outbox_ins.get(key)
            if queued is not None:  # one message per tuple and channel: the OR of derivations
                merged = queued[3]
                queued[3] = Update(INS, merged.relation, merged.tuple, merged.pv | update.pv)
                self.metrics.nodes[self.me].coalesced += 1
                return
            item = [dst, target, port, update]
            self._outbox_ins[key] = item
        else:
            self._outbox_ins.pop(key, None)  # a later INS must not jump over this retraction
            item = [dst, target, port, update]
        self.outbox.append(item)

    # -- persistence -----------------------------------------------------------------------
    def _dump_parts(self, codec: SegmentedCodec) -> tuple[bytes, dict[str, list]]:
        codec.begin_dump()
        reuse, self._ops_dump = self._ops_dump, None  # reused once
        if reuse is not None and reuse[0] is codec:  # operators unchanged since the last dump
            ops = reuse[1]
            codec.mark_live(reuse[2])
        else:  # pickled at once: the lists of (tuple, number) live no longer than one operator's
            ops = pickle.dumps({name: op.dump_state(codec)
                                for name, op in self.nodes[self.me].items()},
                               protocol=pickle.HIGHEST_PROTOCOL)
            self._ops_dump = (codec, ops, codec.live_numbers())
        published = {view: [(values, None if f is None else codec.ref(f))
                            for values, f in rows.items()]
                     for view, rows in self.published.items()}
        return ops, published

    def dump(self) -> bytes:
        """This node's operator state as bytes: the formulas as forest segments (only those
        new since the last dump are encoded; see :mod:`aspen.engine.segmented_codec`)."""
        if self.outbox or self._ready_boxes:
            raise EngineError("dump needs a quiescent node (messages are waiting)")
        ops, published = self._dump_parts(self._codec)
        if self._codec.needs_compaction():
            self._codec = SegmentedCodec(self.manager)
            ops, published = self._dump_parts(self._codec)
        payload = {
            "version": _NODE_STATE_VERSION,
            "me": self.me,
            "partitions": self.partitions,
            "views": self.views,
            "choices": self.choices,
            "order": self.manager.order,
            "ops": ops,
            "segments": self._codec.flush(),
            "published": published,
            "published_bytes": self.published_bytes,
        }
        return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def load(cls, data: bytes, backend: str | None = None,
             warm: NodeRuntime | None = None,
             manager: ProvenanceManager | None = None) -> NodeRuntime:
        """Restore a node from :meth:`dump` bytes (read through :mod:`aspen.state_pickle`).

        ``warm`` — an earlier restoration of the same node that is discarded — lends its BDD
        manager and decoded formulas when its segments are a prefix of the state's: only the
        segments appended since are decoded (a *warm* load, :attr:`loaded_warm`). Otherwise
        (a cold load) every segment is decoded into ``manager``, or into a fresh manager when
        it is None; a manager without variables yet takes the order the state was dumped with.

        >>> node = NodeRuntime(0, 1, backend="python")
        >>> shared = ProvenanceManager(backend="python")
        >>> NodeRuntime.load(node.dump(), "python", manager=shared).manager is shared
        True
        """
        with collection_paused():
            return cls._load(data, backend, warm, manager)

    @classmethod
    def _load(cls, data: bytes, backend: str | None, warm: NodeRuntime | None,
              manager: ProvenanceManager | None) -> NodeRuntime:
        payload = read_state_payload(data, _READABLE_VERSIONS, "node state")
        codec = None
        if warm is not None and (warm.me, warm.partitions, warm.views, warm.choices) == (
                payload["me"], payload["partitions"], payload["views"], payload["choices"]):
            codec = SegmentedCodec.extending(warm._codec, payload["segments"], payload["order"])
        node = cls(payload["me"], payload["partitions"], payload["views"], backend,
                   choices=payload["choices"], manager=codec.manager if codec else manager)
        node.loaded_warm = codec is not None
        if codec is None:  # a cold load: the manager decodes every segment
            if payload["order"] and not node.manager.order:
                node.manager.set_order(payload["order"])
            codec = SegmentedCodec(node.manager, payload["segments"])
        node._codec = codec
        ops = node.nodes[node.me]
        states = payload["ops"]
        if isinstance(states, bytes):  # version 3: the operators' part pickled on its own
            states = state_pickle.loads(states, "node state")
        for name, state in states.items():
            ops[name].load_state(state, codec)
        node.published = {
            view: {values: None if ref is None else codec.formula(ref) for values, ref in rows}
            for view, rows in payload["published"].items()
        }
        node.published_bytes = payload["published_bytes"]
        return node
