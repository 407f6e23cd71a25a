"""Synchronous rounds over partitioned nodes: the protocol the Spark runtime runs, in one process.

A batch runs in rounds. In round 0 every node kills the batch's dead variables and inserts the
base facts it owns; in every round each node that has mail (or must flush) is restored from its
state bytes, takes its messages, runs to local quiescence, and returns its new state bytes and
its outbox — the messages of the next round. When a round sends nothing, the batch enters its
*flush phase*: from then on every round also fires the MinShip buffers of the nodes that run (lazy
mode ships buffered derivations only then), so a buffered derivation travels one hop per round
rather than one hop per two; the batch ends when a flush round sends nothing. Then :func:`publish_node` lists, per view and node, the rows that appeared or
changed and the tuples that left since the node last published.

:func:`step_node` and :func:`publish_node` are what a Spark task calls inside a partition;
:class:`RoundRuntime` drives them in-process (the reference the Spark path is tested against).

>>> from aspen.engine.batch import Batch, BaseFact
>>> rt = RoundRuntime(views=("reachable",), partitions=3, backend="python")
>>> _ = rt.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "v1"),
...                             BaseFact("link", ("b", "c", 1.0), "v2"))))
>>> sorted(rt.view("reachable"))
[('a', 'b'), ('a', 'c'), ('b', 'c')]
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aspen.engine.batch import BaseFact, Batch
from aspen.engine.node import NodeRuntime, decode_message, encode_message
from aspen.engine.partitioning import owner
from aspen.engine.plan import PlanChoices
from aspen.provenance.bdd import ProvenanceManager
from aspen.views import check_views

__all__ = ["NodeCache", "NodeStep", "Published", "PublishedChanges", "RoundRuntime", "publish_node",
           "step_node"]


@dataclass
class NodeStep:
    """What one node did in one round."""

    state: bytes
    outbox: list[tuple[int, bytes]]   # (destination node, encoded message)
    pending: bool                      # a MinShip buffer holds something
    processed: int = 0                 # messages and facts taken in
    seconds: float = 0.0
    decode_seconds: float = 0.0        # restoring the node from its state bytes (0: a cache hit)


class NodeCache:
    """Nodes this process restored, by node and the digest of their state bytes.

    Content-addressed, so a hit is exactly the node the bytes would restore; an entry is taken
    out while its node runs (a failed step cannot leave a half-updated node behind) and put back
    under the digest of the new state. A Spark task whose node ran last in this Python worker
    skips decoding its state. When the worker holds an older restoration of the node (the node
    ran elsewhere since), :meth:`restore` loads *warm*: it decodes only the formula segments
    appended since. Otherwise it decodes the bytes, as without the cache.

    >>> cache = NodeCache()
    >>> node = NodeRuntime(0, 1, backend="python")
    >>> data = node.dump()
    >>> cache.put(0, data, node)
    >>> hit, how = cache.restore(0, data, backend="python")
    >>> hit is node, how, cache.restore(0, data, backend="python")[1]
    (True, 'hit', 'cold')
    """

    def __init__(self) -> None:
        self._nodes: dict[int, tuple[bytes, NodeRuntime]] = {}
        self.hits = self.warm = self.cold = 0

    @staticmethod
    def _digest(state: bytes) -> bytes:
        return hashlib.blake2b(state, digest_size=16).digest()

    def restore(self, me: int, state: bytes, backend: str | None = None
                ) -> tuple[NodeRuntime, str]:
        """Node ``me`` as ``state`` stands for, and how it was obtained: ``hit`` (cached),
        ``warm`` (an older entry plus the segments appended since) or ``cold`` (decoded). The
        entry is taken out of the cache until :meth:`put` returns it."""
        entry = self._nodes.pop(me, None)
        if entry is not None and entry[0] == self._digest(state):
            self.hits += 1
            return entry[1], "hit"
        node = NodeRuntime.load(state, backend, warm=entry[1] if entry else None)
        if entry is not None and node.manager is entry[1].manager:
            self.warm += 1
            return node, "warm"
        self.cold += 1
        return node, "cold"

    def put(self, me: int, state: bytes, node: NodeRuntime) -> None:
        """Remember ``node`` as the restoration of ``state``."""
        self._nodes[me] = (self._digest(state), node)


def _restore(me: int, partitions: int, views: Sequence[str], choices: PlanChoices,
             state: bytes | None, backend: str | None, cache: NodeCache | None
             ) -> tuple[NodeRuntime, float]:
    """The node ``state`` stands for, and the seconds spent decoding it (0 on a cache hit)."""
    if not state:
        return NodeRuntime(me, partitions, views, backend, choices=choices), 0.0
    started = time.perf_counter()
    if cache is None:
        node, how = NodeRuntime.load(state, backend), "cold"
    else:
        node, how = cache.restore(me, state, backend)
    return node, 0.0 if how == "hit" else max(time.perf_counter() - started, 1e-9)


def step_node(
    me: int,
    partitions: int,
    views: Sequence[str],
    choices: PlanChoices,
    state: bytes | None,
    *,
    dead: Iterable[str] = (),
    facts: Iterable[BaseFact] = (),
    inbox: Iterable[tuple[int, bytes]] = (),
    flush: bool = False,
    backend: str | None = None,
    cache: NodeCache | None = None,
) -> NodeStep:
    """One round of node ``me``: restore, kill ``dead``, insert ``facts``, take ``inbox``
    (``(sender, message bytes)``), run; return the new state and the outbox."""
    started = time.perf_counter()
    node, decode_seconds = _restore(me, partitions, views, choices, state, backend, cache)
    node.kill(frozenset(dead))
    processed = 0
    for fact in facts:
        node.insert(fact)
        processed += 1
    for src, data in inbox:
        target, port, update = decode_message(data, node.manager)
        node.receive(src, target, port, update)
        processed += 1
    outbox = [
        (dst, encode_message(target, port, update, node.manager))
        for dst, target, port, update in node.run(flush=flush)
    ]
    new_state = node.dump()
    if cache is not None:
        cache.put(me, new_state, node)
    return NodeStep(new_state, outbox, node.has_pending(), processed,
                    time.perf_counter() - started, decode_seconds)


#: A view's published changes on one node: (rows upserted with provenance bytes, tuples deleted).
PublishedChanges = tuple[list[tuple[tuple, bytes | None]], list[tuple]]


@dataclass
class Published:
    """What :func:`publish_node` returns for one node."""

    state: bytes                              # the node state remembering what it published
    changes: dict[str, PublishedChanges]      # view → its changes on this node
    view_rows: int                            # rows the node now holds over all views
    prov_bytes: int                           # their provenance bytes


def publish_node(
    state: bytes, backend: str | None = None, cache: NodeCache | None = None, me: int = -1
) -> Published:
    """Per view, the rows of this node that appeared or changed since it last published (tuple,
    provenance bytes or None) and the tuples it no longer holds; the node state remembering
    them; the node's published rows and provenance bytes (kept incrementally). Only changed
    rows are encoded."""
    node, how = cache.restore(me, state, backend) if cache is not None \
        else (NodeRuntime.load(state, backend), "cold")
    encode = node.manager.encode
    changed: dict[str, PublishedChanges] = {}
    for view, (upserts, deletes) in node.view_changes().items():
        encoded = [(values, None if f is None else encode(f)) for values, f in upserts]
        sizes = node.published_bytes.setdefault(view, {})
        for values in deletes:
            sizes.pop(values, None)
        for values, data in encoded:
            sizes[values] = len(data) if data is not None else 0
        changed[view] = (encoded, deletes)
    new_state = node.dump() if changed else state
    if how == "hit":
        # the deletion index (not part of the state) of a node that stayed in this worker's
        # memory: brought up to date once per batch, in proportion to what the batch changed,
        # so that the next deletion does not pay for it. A node loaded from bytes would index
        # every entry: left to its first deletion, which may land on another worker anyway.
        node.index_provenance()
    if cache is not None:
        cache.put(node.me, new_state, node)
    return Published(new_state, changed, *node.published_totals())


@dataclass
class RoundRuntime:
    """The round protocol in one process, every node's state round-tripping through bytes."""

    views: Sequence[str] = ("reachable",)
    partitions: int = 4
    mode: str = "lazy"
    backend: str | None = None
    choices: PlanChoices | None = None
    states: dict[int, bytes] = field(default_factory=dict)
    pending: set[int] = field(default_factory=set)
    #: view → tuple → (node that published it, provenance bytes or None)
    rows: dict[str, dict[tuple, tuple[int, bytes | None]]] = field(default_factory=dict)
    rounds: int = 0
    shipped: int = 0  # rows a Spark run would shuffle: messages and kill notices
    cache: NodeCache | None = None  # None: every round decodes (exercises the state codec)

    def __post_init__(self) -> None:
        self.views = check_views(self.views)
        self.choices = self.choices or PlanChoices(mode=self.mode)
        self.live: dict[str, BaseFact] = {}

    def apply(self, batch: Batch) -> dict[str, set[int]]:
        """Run one batch to quiescence and publish; returns view → nodes republished."""
        dead = frozenset(v for v in batch.deletes if v in self.live)
        for var in dead:
            del self.live[var]
        self.shipped += len(dead) * self.partitions  # a kill row per node (the Spark crossJoin)
        facts: dict[int, list[BaseFact]] = {}
        for fact in batch.inserts:
            self.live[fact.var] = fact
            facts.setdefault(owner(fact.values[0], self.partitions), []).append(fact)
        mail: dict[int, list[tuple[int, bytes]]] = {}
        active = set(facts) | (set(range(self.partitions)) if dead else set())
        first, flushing = True, False
        while True:
            nodes = active | set(mail) | (self.pending if flushing else set())
            next_mail: dict[int, list[tuple[int, bytes]]] = {}
            for me in sorted(nodes):
                step = step_node(
                    me, self.partitions, self.views, self.choices, self.states.get(me),
                    dead=dead if first else (), facts=facts.get(me, ()) if first else (),
                    inbox=mail.get(me, ()), flush=flushing, backend=self.backend,
                    cache=self.cache,
                )
                self.states[me] = step.state
                self.pending.discard(me)
                if step.pending:
                    self.pending.add(me)
                for dst, data in step.outbox:
                    next_mail.setdefault(dst, []).append((me, data))
                    self.shipped += 1
            self.rounds += 1
            first, active, mail = False, set(), next_mail
            if mail:
                continue
            if flushing or not self.pending:
                break
            flushing = True
        published: dict[str, set[int]] = {}
        for me, state in list(self.states.items()):
            out = publish_node(state, self.backend, self.cache, me)
            self.states[me] = out.state
            for view, (upserts, deletes) in out.changes.items():
                rows = self.rows.setdefault(view, {})
                for values in deletes:
                    del rows[values]
                for values, data in upserts:
                    if rows.get(values, (me,))[0] != me:
                        raise AssertionError(f"{view}{values} published by two nodes")
                    rows[values] = (me, data)
                published.setdefault(view, set()).add(me)
        return published

    def view(self, name: str, manager: ProvenanceManager | None = None) -> dict[tuple, Any]:
        """The published view: tuples → formula decoded into ``manager`` (or bytes without)."""
        return {values: data if manager is None or data is None else manager.decode(data)
                for values, (_node, data) in self.rows.get(name, {}).items()}
