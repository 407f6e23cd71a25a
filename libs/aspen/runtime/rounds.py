"""Synchronous rounds over partitioned nodes: the protocol the Spark runtime runs, in one process.

A batch runs in rounds. In round 0 every node kills the batch's dead variables and inserts the
base facts it owns; in every round each node that has mail (or must flush) is restored from its
state, takes its messages, runs to local quiescence, and returns its new state and its outbox —
the messages of the next round. When a round sends nothing, the batch enters its *flush phase*:
from then on every round also fires the MinShip buffers of the nodes that run (lazy mode ships
buffered derivations only then), so a buffered derivation travels one hop per round rather than
one hop per two; the batch ends when a flush round sends nothing. Then :func:`publish_node`
lists, per view and node, the rows that appeared or changed and the tuples that left since the
node last published.

Mail between hosts arrives in no fixed order (a Spark reducer fetches its blocks in any order, and a
``groupBy`` does not keep the rows' order within a group), but a channel — the messages from one
node to another — must stay FIFO: a node sends a retraction of a tuple before a new derivation of
it, and the other order would leave the tuple deleted. So each message travels with its place in
its sender host's outbox (:data:`Mail`) and :func:`run_host` takes a node's mail in sender, then
place order: the same order however it was delivered, and on every retry.

Nodes live on *hosts* (:func:`host_of`; a Spark task per host and round). A message to a node on
the same host is delivered within the round: the host runs its nodes in sub-rounds until none of
them has local mail (:func:`run_host`), and only messages to other hosts wait for the next round.
With a host per node (the default) every message crosses rounds; with fewer hosts a batch takes
fewer rounds — on one host a batch is one round (plus its flush) — while the query nodes, their
state and the messages between them are the same.

A node's state is the state bytes of its last compaction plus its *journal*: the
:class:`RoundInput` of every round it ran and every publish since, over as many batches as that
spans. A worker that holds the node in memory (:class:`NodeCache`) applies only the new entry;
any other worker restores the bytes and replays the journal (the outboxes of replayed rounds are
discarded: they were sent). So neither a round nor a publish dumps the node — a dump walks the
whole state, about a second per 1,000-node query node — unless :func:`needs_compaction` says the
journal has grown too large or too costly to replay.

:func:`run_host` (one :func:`step_node` per node and sub-round) and :func:`publish_node` are
what a Spark task calls;
:class:`RoundRuntime` drives them in-process (the reference the Spark path is tested against).

>>> from aspen.engine.batch import Batch, BaseFact
>>> rt = RoundRuntime(views=("reachable",), partitions=3, backend="python")
>>> _ = rt.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "v1"),
...                             BaseFact("link", ("b", "c", 1.0), "v2"))))
>>> sorted(rt.view("reachable"))
[('a', 'b'), ('a', 'c'), ('b', 'c')]
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import pickle
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aspen import state_pickle
from aspen.catalog import check_views
from aspen.engine.batch import BaseFact, Batch
from aspen.engine.partitioning import owner
from aspen.engine.plan import PlanChoices
from aspen.engine.records import Update
from aspen.errors import EngineError
from aspen.provenance.bdd import ProvenanceManager, default_backend
from aspen.provenance.placement import VariablePlacement
from aspen.runtime.node import NodeRuntime, OutboxEntry, decode_messages, encode_messages

__all__ = ["SHARED_CACHE_SLOTS", "HostRound", "Mail", "NodeCache", "NodeStep", "Published",
           "PublishedChanges", "RoundInput", "RoundRuntime", "State", "StoredState",
           "decode_journal", "encode_journal", "host_of", "mail_in_order", "needs_compaction",
           "publish_changes", "publish_node", "rounds_to_quiescence", "run_host", "state_bytes",
           "state_digest", "state_size", "step_node"]

#: A journal is compacted (the node dumped) once its inputs' bytes exceed this share of the
#: state bytes, or :data:`JOURNAL_MIN_BYTES`, whichever is larger (the journal rides every round
#: the node runs), or once its rounds took longer than a dump would (a worker without the node
#: replays them: a deletion's round, which restricts every formula, is worth a dump).
JOURNAL_SHARE = 0.25
JOURNAL_MIN_BYTES = 256 * 1024
#: What a dump costs per MB of state bytes (measured: ≈1 s for a 17 MB 1,000-node query node).
DUMP_SECONDS_PER_MB = 0.06


@dataclass(frozen=True)
class RoundInput:
    """What a node took in one round: the dead variables, its base facts, its messages
    (``(sender, message bytes)``) and whether the round fired the MinShip buffers; or, with
    ``publish``, that the node published its views' changes (:func:`publish_changes`)."""

    dead: tuple[str, ...] = ()
    facts: tuple[BaseFact, ...] = ()
    inbox: tuple[tuple[int, bytes], ...] = ()
    flush: bool = False
    seconds: float = field(default=0.0, compare=False)  # what running it took (not replaying)
    publish: bool = False

    @property
    def size(self) -> int:
        """Approximate bytes (the messages' bytes, plus a little per fact and variable)."""
        return sum(len(data) for _src, data in self.inbox) + 64 * (len(self.facts)
                                                                   + len(self.dead))

    def apply(self, node: NodeRuntime) -> list[OutboxEntry]:
        """Run this round on ``node``; returns its raw outbox ``[dst, target, port, update]``."""
        if self.publish:
            publish_changes(node)
            return []
        node.kill(frozenset(self.dead))
        for fact in self.facts:
            node.insert(fact)
        for src, data in self.inbox:
            for target, port, update in decode_messages(data, node.manager):
                node.receive(src, target, port, update)
        return node.run(flush=self.flush)


def encode_journal(entries: Iterable[RoundInput]) -> bytes:
    """Journal bytes: one pickle per entry, so appending is a concatenation.

    >>> entries = (RoundInput(dead=("v1",)), RoundInput(flush=True))
    >>> decode_journal(encode_journal(entries[:1]) + encode_journal(entries[1:])) == entries
    True
    """
    return b"".join(pickle.dumps(e, protocol=pickle.HIGHEST_PROTOCOL) for e in entries)


def decode_journal(data: bytes | None) -> tuple[RoundInput, ...]:
    """The entries of :func:`encode_journal` bytes (read through :mod:`aspen.state_pickle`).

    >>> old = pickle.dumps(RoundInput(flush=True), protocol=0).replace(
    ...     b"aspen.runtime.rounds", b"aspen.engine.rounds")  # the module's former name
    >>> decode_journal(old)
    (RoundInput(dead=(), facts=(), inbox=(), flush=True, seconds=0.0, publish=False),)
    """
    if not data:
        return ()
    # the module was ``aspen.engine.rounds`` once: a lake's node_state keeps such journals
    return tuple(state_pickle.load_all(data, "a node's journal",
                                       renames={"aspen.engine.rounds": __name__}))


def state_digest(data: bytes) -> bytes:
    """The digest that names state bytes (the key of :class:`NodeCache`).

    >>> len(state_digest(b"state")), state_digest(b"a") == state_digest(b"a")
    (16, True)
    """
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(frozen=True)
class StoredState:
    """State bytes known by their digest and size, fetched only if a worker must decode them:
    a worker that holds the node in memory never reads them (the Spark runtime reads a stored
    node's bytes from ``node_state`` on such a miss instead of shipping them through every
    round).

    >>> stored = StoredState(state_digest(b"abc"), 3, lambda: b"abc")
    >>> state_bytes(stored), state_size(stored), state_size(b"abcd"), state_size(None)
    (b'abc', 3, 4, 0)
    """

    digest: bytes
    size: int
    fetch: Callable[[], bytes] = field(compare=False, repr=False)


#: Mail between hosts as delivered: (sender node, place in the sender host's outbox this
#: round, the bytes of its messages: :func:`~aspen.runtime.node.encode_messages`);
#: :func:`mail_in_order` puts a node's mail back in channel order.
Mail = tuple[int, int, bytes]


def mail_in_order(box: Iterable[Mail]) -> list[tuple[int, bytes]]:
    """``(sender, message)`` in sender, then place order: each channel FIFO, however ``box``
    arrived.

    >>> mail_in_order([(2, 1, b"y"), (1, 7, b"c"), (2, 0, b"x")])
    [(1, b'c'), (2, b'x'), (2, b'y')]
    """
    return [(src, data) for src, _place, data in sorted(box, key=lambda mail: mail[:2])]


#: A node's state as the rounds pass it on: bytes, stored bytes fetched on demand, or none yet.
State = bytes | StoredState | None


def state_size(state: State) -> int:
    """The size in bytes of ``state``."""
    return state.size if isinstance(state, StoredState) else len(state or b"")


def state_bytes(state: State) -> bytes:
    """The bytes of ``state`` (fetched, checked against the digest, if stored)."""
    if not isinstance(state, StoredState):
        return state or b""
    data = state.fetch()
    if state_digest(data) != state.digest:
        raise EngineError("stored node state does not match its digest (written concurrently?)")
    return data


def needs_compaction(state: State, journal: Sequence[RoundInput],
                     limit: int | None = None, by_time: bool = True) -> bool:
    """Whether a node with ``journal`` since ``state`` should be dumped now: see
    :data:`JOURNAL_SHARE`. ``limit`` replaces the policy by a fixed budget in journal bytes (0
    dumps every round). A node without state bytes is dumped. ``by_time=False`` leaves the
    time rule out: it is about replaying in another process, so a round whose node stays in
    memory until the batch publishes (a resident host process) leaves it to the publish.

    >>> mb = b"x" * 2**20
    >>> needs_compaction(mb, [RoundInput(dead=("v1",))]), needs_compaction(b"x", [], 0)
    (False, True)
    >>> needs_compaction(mb, [RoundInput(dead=("v1",), seconds=0.5)])  # longer than a dump
    True
    >>> needs_compaction(mb, [RoundInput(dead=("v1",), seconds=0.5)], by_time=False)
    False
    """
    if not state:  # a node's first round: later restores need bytes to start from
        return True
    size = sum(entry.size for entry in journal)
    if limit is not None:
        return size >= limit
    stored = state_size(state)
    return size >= max(JOURNAL_MIN_BYTES, int(JOURNAL_SHARE * stored)) or (by_time and sum(
        entry.seconds for entry in journal) >= DUMP_SECONDS_PER_MB * stored / 2**20)


@dataclass
class NodeStep:
    """What one node did in one round."""

    state: State                       # the state given, or new bytes when ``dumped``
    journal: tuple[RoundInput, ...]    # the rounds run since ``state``, this one included
    outbox: list[tuple[int, int, bytes]]  # (destination, messages, their bytes: encode_messages)
    pending: bool                      # a MinShip buffer holds something
    processed: int = 0                 # messages and facts taken in
    seconds: float = 0.0
    decode_seconds: float = 0.0        # restoring the node (0: a cache hit with nothing to replay)
    replayed: int = 0                  # journal entries replayed to restore it
    dumped: bool = False               # the journal was compacted into new state bytes


#: The most computed-table slots CUDD may grow a :class:`NodeCache`'s shared manager to (dd sets
#: no limit): uncapped it grows to millions of slots at 1,000 nodes; capped, it uses less memory
#: and is no slower (measurements: docs/performance.md).
SHARED_CACHE_SLOTS = 2**20


class NodeCache:
    """Nodes this process restored, by node, the digest of their state bytes and how many
    journal entries they have applied since.

    Content-addressed, so a hit is exactly the node the bytes and the journal's first entries
    would restore; an entry is taken out while its node runs (a failed step cannot leave a
    half-updated node behind) and put back with what it then stands for. A Spark task whose node
    ran last in this Python worker skips decoding its state and replays only the journal entries
    it has not seen (none, when the node's previous round ran here). When the worker holds an
    older restoration of the node (the node was compacted elsewhere since), :meth:`restore`
    loads *warm*: it decodes only the formula segments appended since. Otherwise it decodes the
    bytes, as without the cache.

    The nodes a cache restores or creates share one BDD manager per backend
    (:meth:`manager`): a formula that several nodes of this process hold — a message's, which
    the sender and the receiver keep — is one set of BDD nodes, not one per node, and the
    process has one unique table and one computed table instead of one per node
    (measurements: docs/performance.md). ``share_manager=False`` gives each node its own manager.

    >>> cache = NodeCache()
    >>> node = NodeRuntime(0, 1, backend="python")
    >>> data = node.dump()
    >>> cache.put(0, data, node)
    >>> hit, how = cache.restore(0, data, backend="python")
    >>> hit is node, how, cache.restore(0, data, backend="python")[1]
    (True, 'hit', 'cold')
    >>> fresh = cache.restore(1, None, "python", blank=lambda manager: NodeRuntime(
    ...     1, 2, backend="python", manager=manager))[0]
    >>> fresh.manager is cache.manager("python")
    True
    """

    def __init__(self, share_manager: bool = True) -> None:
        self._nodes: dict[int, tuple[bytes, int, NodeRuntime]] = {}
        self.share_manager = share_manager
        self._managers: dict[str, ProvenanceManager] = {}
        self.hits = self.warm = self.cold = self.replayed = 0

    def manager(self, backend: str | None = None) -> ProvenanceManager | None:
        """The BDD manager of ``backend`` that the nodes this cache restores share (None
        without ``share_manager``: each node gets its own)."""
        if not self.share_manager:
            return None
        name = backend or default_backend()
        if name not in self._managers:
            manager = ProvenanceManager(name)
            if name == "cudd":  # dd lifts CUDD's cap on the computed table's growth
                manager.bdd.configure(max_cache_hard=SHARED_CACHE_SLOTS)
            self._managers[name] = manager
        return self._managers[name]

    @staticmethod
    def _digest(state: State) -> bytes:
        return state.digest if isinstance(state, StoredState) else state_digest(state or b"")

    def restore(self, me: int, state: State, backend: str | None = None,
                journal: Sequence[RoundInput] = (),
                blank: Callable[[ProvenanceManager | None], NodeRuntime] | None = None,
                ) -> tuple[NodeRuntime, str]:
        """Node ``me`` as ``state`` plus ``journal`` stand for, and how it was obtained: ``hit``
        (cached), ``warm`` (an older entry plus the segments appended since), ``cold``
        (decoded) or ``new`` (no state bytes yet: ``blank(manager)``, given :meth:`manager`);
        all but a hit replay the whole journal. The entry is taken out of the cache until
        :meth:`put` returns it."""
        entry = self._nodes.pop(me, None)
        if entry is not None and entry[0] == self._digest(state) and entry[1] <= len(journal):
            self.hits += 1
            node, how, seen = entry[2], "hit", entry[1]
        elif not state:
            if blank is None:
                raise EngineError(f"node {me} has no state bytes to restore")
            node, how, seen = blank(self.manager(backend)), "new", 0
        else:
            node = NodeRuntime.load(state_bytes(state), backend,
                                    warm=entry[2] if entry else None,
                                    manager=self.manager(backend))
            how = "warm" if node.loaded_warm else "cold"
            self.warm += how == "warm"
            self.cold += how == "cold"
            seen = 0
        for item in journal[seen:]:
            item.apply(node)  # its outbox was sent when the round ran
        self.replayed += len(journal) - seen
        return node, how

    def put(self, me: int, state: State, node: NodeRuntime, applied: int = 0) -> None:
        """Remember ``node`` as ``state`` with the first ``applied`` journal entries applied."""
        self._nodes[me] = (self._digest(state), applied, node)


def _restore(me: int, partitions: int, views: Sequence[str], choices: PlanChoices,
             state: State, journal: Sequence[RoundInput], backend: str | None,
             cache: NodeCache | None) -> tuple[NodeRuntime, float, int]:
    """The node ``state`` and ``journal`` stand for, the seconds spent restoring it (0 on a
    cache hit with nothing to replay) and the journal entries replayed."""
    started = time.perf_counter()
    cache = cache if cache is not None else NodeCache()  # none: a throwaway, every step decodes
    before = cache.replayed
    node, how = cache.restore(me, state, backend, journal, blank=lambda manager: NodeRuntime(
        me, partitions, views, backend, choices=choices, manager=manager))
    replayed = cache.replayed - before
    quick = how == "new" or (how == "hit" and not replayed)
    return node, 0.0 if quick else max(time.perf_counter() - started, 1e-9), replayed


def step_node(
    me: int,
    partitions: int,
    views: Sequence[str],
    choices: PlanChoices,
    state: State,
    *,
    journal: Sequence[RoundInput] = (),
    dead: Iterable[str] = (),
    facts: Iterable[BaseFact] = (),
    inbox: Iterable[tuple[int, bytes]] = (),
    flush: bool = False,
    backend: str | None = None,
    cache: NodeCache | None = None,
    compact_over: int | None = None,
    compact_by_time: bool = True,
    order: Sequence[str] = (),
) -> NodeStep:
    """One round of node ``me``: restore it (``state`` and the ``journal`` since), kill
    ``dead``, insert ``facts``, take ``inbox`` (``(sender, message bytes)``), run; return the
    state and journal it now stands for, and the outbox. The node is dumped (and the journal
    emptied) only when :func:`needs_compaction` says so (``compact_over``: its byte budget;
    ``compact_by_time``: its time rule applies). ``order`` is the batch's variable order
    (:class:`~aspen.provenance.placement.VariablePlacement`): the node's manager takes it before
    the facts and mail declare their variables."""
    started = time.perf_counter()
    node, decode_seconds, replayed = _restore(me, partitions, views, choices, state, journal,
                                              backend, cache)
    if order:
        node.manager.place(order)
    item = RoundInput(tuple(dead), tuple(facts), tuple(inbox), flush)
    work_started = time.perf_counter()
    outbox = _bundled(item.apply(node), node.manager)
    item = dataclasses.replace(item, seconds=time.perf_counter() - work_started)
    new_journal = (*journal, item)
    dumped = needs_compaction(state, new_journal, compact_over, compact_by_time)
    if dumped:
        state, new_journal = node.dump(), ()
    if cache is not None:
        cache.put(me, state, node, len(new_journal))
    return NodeStep(state, new_journal, outbox, node.has_pending(),
                    len(item.facts) + len(item.inbox), time.perf_counter() - started,
                    decode_seconds, replayed, dumped)


def _bundled(raw: Iterable[OutboxEntry],
             manager: ProvenanceManager) -> list[tuple[int, int, bytes]]:
    """A step's raw outbox (:data:`~aspen.runtime.node.OutboxEntry`) as one :func:`encode_messages`
    bundle per destination (``(dst, messages, bytes)``), each in the order sent."""
    by_dst: dict[int, list[tuple[str, str, Update]]] = {}
    for dst, target, port, update in raw:
        by_dst.setdefault(dst, []).append((target, port, update))
    return [(dst, len(messages), encode_messages(messages, manager))
            for dst, messages in by_dst.items()]


def host_of(node: int, hosts: int) -> int:
    """The host (0 … hosts-1) that runs query node ``node``: nodes are dealt out in turn.

    >>> [host_of(n, 2) for n in range(5)], host_of(7, 12)
    ([0, 1, 0, 1, 0], 7)
    """
    return node % hosts


@dataclass
class HostRound:
    """What one host did in one round: every node it ran (the keys of ``pending``), summed over
    the sub-rounds. Their states and journals are updated in the dicts :func:`run_host` got."""

    pending: dict[int, bool]                         # node → a MinShip buffer holds something
    outbox: list[tuple[int, int, bytes]]             # (sender, destination, messages): other
                                                     # hosts, in the order sent (encode_messages)
    shipped: dict[tuple[int, int], list[int]]        # (sender, destination) → [rows, bytes] out
    delivered: dict[tuple[int, int], list[int]]      # (sender, destination) → [rows, bytes] here
    counters: dict[int, dict[str, float]]            # node → processed, seconds, decode_s, …
    subrounds: int = 0


def rounds_to_quiescence(first: set[int], pending: set[int],
                         run_round: Callable[[set[int], bool], set[int]]) -> int:
    """The round protocol's schedule, for every runtime that runs it: rounds over the nodes
    that have mail (``first``: those of the batch's facts and kills) until a round sends
    nothing, then flush rounds — the nodes with mail and those with buffered MinShip entries
    (``pending``, which ``run_round`` keeps up to date) — until a flush round sends nothing.
    ``run_round(nodes, flushing)`` runs one round and returns the nodes it sent mail to; the
    rounds run are returned.

    >>> mail = {frozenset({0}): {1}, frozenset({1}): set()}
    >>> rounds_to_quiescence({0}, set(), lambda nodes, flushing: mail[frozenset(nodes)])
    2
    """
    active, flushing, rounds = set(first), False, 0
    while True:
        active = run_round(active | (pending if flushing else set()), flushing)
        rounds += 1
        if active:  # once flushing, every round flushes: the flush phase ships one hop a round
            continue
        if flushing or not pending:
            return rounds
        flushing = True


def run_host(
    host: int,
    hosts: int,
    partitions: int,
    views: Sequence[str],
    choices: PlanChoices,
    states: dict[int, State],
    journals: dict[int, tuple[RoundInput, ...]],
    nodes: Iterable[int],
    *,
    dead: Iterable[str] = (),
    facts: dict[int, Sequence[BaseFact]] | None = None,
    inbox: dict[int, Iterable[Mail]] | None = None,
    flush: bool = False,
    backend: str | None = None,
    cache: NodeCache | None = None,
    compact_over: int | None = None,
    compact_by_time: bool = True,
    order: Sequence[str] = (),
) -> HostRound:
    """One round of ``host``: run ``nodes`` (its nodes with facts, mail or, in a flush round, a
    MinShip buffer to fire), then, sub-round after sub-round, every node of the host that got
    mail from another node of the host, until none did (:func:`step_node` each time: a sub-round
    is one more journal entry). ``dead`` and ``facts`` enter in the first sub-round; ``flush``
    holds for all of them. ``states`` and ``journals`` give every node that may run (a node
    without an entry starts empty); the entries of the nodes that ran are replaced by the state
    and journal they now stand for. ``inbox`` is the mail from other hosts, taken per node in
    :func:`mail_in_order`. Messages to other hosts are returned in the order sent (a message's
    index in :attr:`HostRound.outbox` is its place).
    ``compact_over``, ``compact_by_time`` and ``order`` go to each :func:`step_node`.

    On one host, the link's node (0) tells the node owning ``b`` (1) in a second sub-round:

    >>> from aspen.engine.batch import BaseFact
    >>> facts = {0: [BaseFact("link", ("a", "b", 1.0), "v1")]}
    >>> done = run_host(0, 1, 2, ("reachable",), PlanChoices(), {}, {}, [0], facts=facts,
    ...                 backend="python")
    >>> done.outbox, done.subrounds, sorted(done.pending), done.delivered
    ([], 2, [0, 1], {(0, 1): [1, 94]})
    """
    facts = facts or {}
    mail = {me: ordered for me, box in (inbox or {}).items() if (ordered := mail_in_order(box))}
    dead = tuple(dead)
    done = HostRound({}, [], {}, {}, {})
    to_run, first = set(nodes) | set(mail), True
    while to_run:
        if any(host_of(me, hosts) != host for me in to_run):
            raise EngineError(f"host {host} asked to run nodes of other hosts: {sorted(to_run)}")
        local: dict[int, list[tuple[int, bytes]]] = {}
        for me in sorted(to_run):
            step = step_node(
                me, partitions, views, choices, states.get(me), journal=journals.get(me, ()),
                dead=dead if first else (), facts=facts.get(me, ()) if first else (),
                inbox=mail.get(me, ()), flush=flush, backend=backend, cache=cache,
                compact_over=compact_over, compact_by_time=compact_by_time, order=order)
            states[me], journals[me] = step.state, step.journal
            done.pending[me] = step.pending
            counters = done.counters.setdefault(me, defaultdict(float))
            for name, value in (("processed", step.processed), ("time_s", step.seconds),
                                ("decode_s", step.decode_seconds),
                                ("decodes", step.decode_seconds > 0),
                                ("replayed", step.replayed), ("dumps", step.dumped),
                                ("steps", 1)):
                counters[name] += float(value)
            for dst, count, data in step.outbox:
                here = host_of(dst, hosts) == host
                if here:
                    local.setdefault(dst, []).append((me, data))
                else:
                    done.outbox.append((me, dst, data))
                channel = (done.delivered if here else done.shipped).setdefault((me, dst), [0, 0])
                channel[0] += count
                channel[1] += len(data)
        done.subrounds += 1
        first, mail, to_run = False, local, set(local)
    return done


#: A view's published changes on one node: (rows upserted with provenance bytes, tuples deleted).
PublishedChanges = tuple[list[tuple[tuple, bytes | None]], list[tuple]]


@dataclass
class Published:
    """What :func:`publish_node` returns for one node."""

    state: State                              # the state given, new bytes when ``dumped``
    journal: tuple[RoundInput, ...]           # the rounds and publishes since ``state``
    changes: dict[str, PublishedChanges]      # view → its changes on this node
    view_rows: int                            # rows the node now holds over all views
    prov_bytes: int                           # their provenance bytes
    dumped: bool = False                      # the journal was compacted into new bytes
    restored: bool = False                    # the node was not in the cache: decoded or new
    #: view → rows the node holds now minus rows it held when it last published
    size_changes: dict[str, int] = field(default_factory=dict)


def publish_changes(node: NodeRuntime) -> dict[str, PublishedChanges]:
    """Per view, the rows of ``node`` that appeared or changed since it last published (tuple,
    provenance bytes or None) and the tuples it no longer holds; the node then remembers them
    as published (with their provenance bytes, for its totals). Only changed rows are encoded.
    Deterministic given the node, so a journal replays it."""
    encode_each = node.manager.encode_each
    changed: dict[str, PublishedChanges] = {}
    for view, (upserts, deletes) in node.view_changes().items():
        data = iter(encode_each([f for _, f in upserts if f is not None]))
        encoded = [(values, None if f is None else next(data)) for values, f in upserts]
        sizes = node.published_bytes.setdefault(view, {})
        for values in deletes:
            sizes.pop(values, None)
        for values, data in encoded:
            sizes[values] = len(data) if data is not None else 0
        changed[view] = (encoded, deletes)
    return changed


def publish_node(
    state: State, backend: str | None = None, cache: NodeCache | None = None, me: int = -1,
    journal: Sequence[RoundInput] = (), compact_over: int | None = None,
    order: Sequence[str] = (),
) -> Published:
    """Publish node ``me`` (``state`` plus ``journal``): its views' changes
    (:func:`publish_changes`), and the state and journal that remember them. The publish joins
    the journal as one more entry, so the journal outlives the batch and the node is dumped only
    when :func:`needs_compaction` says so (``compact_over``: its byte budget), not once a batch:
    a dump walks the whole state. The rows are encoded in ``order`` (the batch's variable order)
    when given."""
    if cache is None:
        cache = NodeCache()  # a throwaway: the node is decoded
    node, how = cache.restore(me, state, backend, journal)
    if order:
        node.manager.place(order)
    started = time.perf_counter()
    held = {view: len(node.published.get(view, {})) for view in node.views}
    changed = publish_changes(node)
    grown = {view: len(node.published.get(view, {})) - held[view] for view in changed}
    if changed:
        journal = (*journal, RoundInput(publish=True, seconds=time.perf_counter() - started))
    dumped = bool(journal) and needs_compaction(state, journal, compact_over)
    if dumped:
        state, journal = node.dump(), ()
    if how == "hit":
        # the deletion index (not part of the state) of a node that stayed in this worker's
        # memory: brought up to date once per batch, in proportion to what the batch changed,
        # so that the next deletion does not pay for it. The stores of a node restored from
        # bytes are not indexed at all: their deletions scan them (ProvenanceStore.restrict).
        node.index_provenance(incremental=True)
    cache.put(node.me, state, node, len(journal))
    return Published(state, tuple(journal), changed, *node.published_totals(), dumped,
                     how != "hit", grown)


@dataclass
class RoundRuntime:
    """The round protocol in one process. Without a ``cache`` every node is restored from its
    bytes and replays its journal each round (exercising the codec and the replay). With
    ``stored``, states cross batches as :class:`StoredState` (as the Spark runtime's rows do):
    their bytes are fetched only on a cache miss (listed in :attr:`fetched`). With ``hosts``,
    nodes share hosts and mail between nodes of a host is delivered within the round.

    With ``disorder`` (a seeded RNG) every host round and every publish runs twice, as a Spark
    task that is retried after its first attempt's result was lost: the first attempt runs on
    copies and is thrown away, but what it did stays in ``cache`` (a host process outlives a
    task), and each attempt gets every node's mail in another order (a reducer fetches its
    blocks in no fixed order). The views must not depend on either."""

    views: Sequence[str] = ("reachable",)
    partitions: int = 4
    mode: str = "lazy"
    backend: str | None = None
    choices: PlanChoices | None = None
    states: dict[int, State] = field(default_factory=dict)
    #: node → the rounds it ran and the publishes since ``states[node]``
    journals: dict[int, tuple[RoundInput, ...]] = field(default_factory=dict)
    pending: set[int] = field(default_factory=set)
    #: view → tuple → (node that published it, provenance bytes or None)
    rows: dict[str, dict[tuple, tuple[int, bytes | None]]] = field(default_factory=dict)
    rounds: int = 0
    shipped: int = 0  # messages between nodes and kill notices
    hosts: int | None = None  # nodes share hosts (:func:`run_host`); None: a host per node
    cache: NodeCache | None = None  # None: every round decodes (exercises the state codec)
    compact_over: int | None = None  # journal bytes that trigger a dump (None: the policy)
    stored: bool = False
    #: one entry per stored state fetched (a list, so that the fetch closures hold no cycle)
    fetched: list[int] = field(default_factory=list)
    disorder: random.Random | None = None  # retried attempts, mail in random order (above)

    def __post_init__(self) -> None:
        self.views = check_views(self.views)
        self.choices = self.choices or PlanChoices(mode=self.mode)
        self.live: dict[str, BaseFact] = {}
        self.placement = VariablePlacement(k=self.choices.k)

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
        self.placement.apply([(f.var, f.relation, f.values) for f in batch.inserts], dead)
        order = tuple(self.placement.order)
        mail: dict[int, list[Mail]] = {}
        hosts = self.hosts or self.partitions
        first = True

        def one_round(nodes: set[int], flushing: bool) -> set[int]:
            nonlocal first, mail
            next_mail: dict[int, list[Mail]] = {}
            for host in sorted({host_of(me, hosts) for me in nodes}):
                run = functools.partial(
                    run_host, host, hosts, self.partitions, self.views, self.choices,
                    nodes=[me for me in nodes if host_of(me, hosts) == host],
                    dead=dead if first else (), facts=facts if first else {},
                    flush=flushing, backend=self.backend, cache=self.cache,
                    compact_over=self.compact_over, order=order)
                inbox = {me: box for me, box in mail.items() if host_of(me, hosts) == host}
                if self.disorder is not None:  # the lost first attempt
                    run(dict(self.states), dict(self.journals), inbox=self._disordered(inbox))
                    inbox = self._disordered(inbox)
                done = run(self.states, self.journals, inbox=inbox)
                for me, pending in done.pending.items():
                    self.pending.discard(me)
                    if pending:
                        self.pending.add(me)
                for place, (src, dst, data) in enumerate(done.outbox):
                    next_mail.setdefault(dst, []).append((src, place, data))
                self.shipped += sum(rows for channels in (done.shipped, done.delivered)
                                    for rows, _size in channels.values())
            first, mail = False, next_mail
            return set(mail)

        self.rounds += rounds_to_quiescence(
            set(facts) | (set(range(self.partitions)) if dead else set()), self.pending,
            one_round)
        published: dict[str, set[int]] = {}
        for me, state in list(self.states.items()):
            publish = functools.partial(publish_node, state, self.backend, self.cache, me,
                                        self.journals.get(me, ()), self.compact_over, order)
            if self.disorder is not None:
                publish()  # the lost first attempt: only the cache remembers it
            out = publish()
            self.states[me], self.journals[me] = self._store(out.state), out.journal
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

    def _disordered(self, inbox: dict[int, list[Mail]]) -> dict[int, list[Mail]]:
        assert self.disorder is not None
        return {me: self.disorder.sample(box, len(box)) for me, box in inbox.items()}

    def _store(self, state: State) -> State:
        if not self.stored or not isinstance(state, bytes):
            return state

        fetched = self.fetched

        def fetch() -> bytes:
            fetched.append(len(state))
            return state

        return StoredState(state_digest(state), len(state), fetch)

    def view(self, name: str, manager: ProvenanceManager | None = None) -> dict[tuple, Any]:
        """The published view: tuples → formula decoded into ``manager`` (or bytes without)."""
        return {values: data if manager is None or data is None else manager.decode(data)
                for values, (_node, data) in self.rows.get(name, {}).items()}
