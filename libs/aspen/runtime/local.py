"""The in-process runtime: N logical nodes running the same dataflow, FIFO channels between them.

Every node holds one instance of each operator of the compiled :class:`~aspen.engine.plan.Dataflow`
(hash partitioning on the first attribute with :func:`aspen.engine.partitioning.owner`). Updates
travel as messages on FIFO channels, one per (sender, receiver) pair; delivering a message runs one
operator, whose outputs are routed by the plan (pipelined semi-naive evaluation: each update meets
only the state that arrived before it). A batch runs to quiescence. With ``coalesce`` (default) an
INS queued on a channel absorbs later INS of the same tuple for the same operator (one message,
the OR of the derivations), unless a retraction of that tuple was queued in between. With
``shuffle_seed`` the next channel to deliver from is chosen at random (per-channel FIFO is kept),
to test order independence.

Deletions (decisions 1-2): the dead variables are broadcast to every node, and every stateful
operator restricts its state with them before any insertion of the batch; the DELs operators emit
because a variable died are therefore not shipped (the receivers restricted themselves), while
alternatives (lazy MinShip), promotions (AggSel) and retractions are. In eager mode the MinShip
timer fires whenever the channels are empty, until nothing is buffered; in lazy mode buffers are
shipped only when needed, or by :meth:`LocalRuntime.flush`.

Variable order: the runtime keeps a :class:`~aspen.provenance.placement.VariablePlacement` of its
live facts and declares each batch's new variables where it places them (``manager.place``)
before inserting them; live variables move only on :meth:`LocalRuntime.relabel`. With
``reorder=True`` CUDD sifts as it likes and the placement is kept but not imposed.

>>> from aspen.engine.batch import Batch, BaseFact
>>> rt = LocalRuntime(views=("reachable",), partitions=2, backend="python")
>>> d = rt.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "v1"),
...                             BaseFact("link", ("b", "c", 1.0), "v2"))))
>>> sorted(d["reachable"].inserted)
[('a', 'b'), ('a', 'c'), ('b', 'c')]
>>> sorted(rt.apply(Batch(deletes=frozenset({"v2"})))["reachable"].deleted)
[('a', 'c'), ('b', 'c')]
"""

from __future__ import annotations

import pickle
import random
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aspen import state_pickle
from aspen.catalog import check_view, check_views
from aspen.engine.batch import BASE_RELATIONS, BaseFact, Batch
from aspen.engine.factory import build_operator, resolve_rule
from aspen.engine.metrics import RuntimeMetrics
from aspen.engine.native.paths import PATH_VIEW_NAMES
from aspen.engine.operators.base import FormulaCodec, Operator
from aspen.engine.operators.fixpoint import Fixpoint
from aspen.engine.operators.join import PipelinedHashJoin
from aspen.engine.operators.store import ProvenanceStore
from aspen.engine.partitioning import owner
from aspen.engine.plan import Dataflow, PlanChoices, Route, ViewOutput
from aspen.engine.records import DEL, INS, Update
from aspen.errors import EngineError, UnknownViewError
from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.provenance.placement import VariablePlacement
from aspen.runtime.core_views import REGION_VIEW_NAMES, build_native, resolve_core
from aspen.views import build_dataflow

__all__ = ["LocalRuntime", "ViewDelta", "read_state_payload"]

_STATE_VERSION = 2  # 2: formulas as one forest encoding


@dataclass
class ViewDelta:
    """The net change of one view's tuple set over a batch."""

    inserted: set[tuple] = field(default_factory=set)
    deleted: set[tuple] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.inserted or self.deleted)


def read_state_payload(data: bytes, version: int | tuple[int, ...], what: str) -> dict[str, Any]:
    """Unpickle state bytes through the state allow-list (:mod:`aspen.state_pickle`: a lake's
    bytes run no code) and check their version (one, or a tuple of those the caller reads);
    :class:`EngineError` otherwise.

    >>> read_state_payload(pickle.dumps({"version": 2, "x": 1}), 2, "state")["x"]
    1
    >>> read_state_payload(pickle.dumps({"version": 2, "x": 1}), (2, 3), "state")["x"]
    1
    """
    payload = state_pickle.loads(data, what)
    versions = version if isinstance(version, tuple) else (version,)
    if not isinstance(payload, dict) or payload.get("version") not in versions:
        raise EngineError(f"not an Aspen {what} (or an unsupported version)")
    return payload


def _membership_delta(stores: list[ProvenanceStore]) -> ViewDelta:
    """The view delta from the membership journals of the view's stores (a tuple is in the view
    when it is in any of them)."""
    journals = [store.membership_changes() for store in stores]
    candidates = set().union(*journals)
    delta = ViewDelta()
    for key in candidates:
        was = any(journal[key] if key in journal else key in store.data
                  for store, journal in zip(stores, journals, strict=True))
        now = any(key in store.data for store in stores)
        if now and not was:
            delta.inserted.add(key)
        elif was and not now:
            delta.deleted.add(key)
    return delta


class _Inbox:
    """The updates queued for one operator on one node, in arrival order: ``items`` holds
    ``[port, update]``; ``remote`` the (sender, item) of the items that crossed nodes (counted as
    messages when delivered); ``pending`` the queued remote INS by (sender, port, tuple), into
    which a later INS of the same tuple on the same channel merges."""

    __slots__ = ("items", "remote", "pending")

    def __init__(self) -> None:
        self.items: list = []
        self.remote: list[tuple[int, list]] = []
        self.pending: dict[tuple, list] = {}


class LocalRuntime:
    """Aspen's operators on ``partitions`` logical nodes in this process."""

    def __init__(
        self,
        views: Iterable[str] = ("reachable",),
        partitions: int = 4,
        mode: str = "lazy",
        batch_size: int | None = None,
        aggsel: bool | str = True,
        backend: str | None = None,
        shuffle_seed: int | None = None,
        k: float = 20.0,
        measure_bytes: bool = True,
        *,
        choices: PlanChoices | None = None,
        coalesce: bool = True,
        reorder: bool | None = False,
        manager: ProvenanceManager | None = None,
        variable_order: str = "dfs",
        core: str = "auto",
    ) -> None:
        if not isinstance(partitions, int) or partitions < 1:
            raise EngineError(f"partitions must be a positive integer, not {partitions!r}")
        self.views = check_views(views)
        self.choices = choices or PlanChoices(mode=mode, batch_size=batch_size, aggsel=aggsel, k=k)
        self.partitions = partitions
        self.shuffle_seed = shuffle_seed
        self.measure_bytes = measure_bytes
        self.manager = manager or ProvenanceManager(backend)
        #: "native" or "reference": which core runs the views the compiled core implements
        self.core = resolve_core(core, self.manager)
        #: the views the compiled core maintains (their reference operators are not built),
        #: and its kernels, each once (one kernel serves every path-family view)
        self.native: dict[str, Any]
        self.native, self._kernels = build_native(self.views, self.core, self.choices,
                                                  self.manager)
        reference = [v for v in self.views if v not in self.native]
        self.dataflow: Dataflow = build_dataflow(reference, self.choices) if reference else \
            Dataflow(ops=(), sources=(), outputs=(), choices=self.choices)
        self.reorder = reorder
        if reorder is not None:  # dd.cudd sifts dynamically by default: slower builds here
            self.manager.bdd.configure(reordering=reorder)
        self.nodes: list[dict[str, Operator]] = [
            {spec.name: build_operator(spec, self.manager, runtime=True)
             for spec in self.dataflow.ops}
            for _ in range(partitions)
        ]
        self._op_order = [spec.name for spec in self.dataflow.ops]
        self._share_states()
        self._routes: dict[str, list[tuple[Route, Callable[[tuple], Any] | None]]] = {
            spec.name: [(r, self._route_rule(r)) for r in spec.routes] for spec in self.dataflow.ops
        }
        self._sources: dict[str, list[tuple[Route, Callable[[tuple], Any] | None]]] = {
            src.relation: [(r, self._route_rule(r)) for r in src.routes]
            for src in self.dataflow.sources
        }
        self._outputs: dict[str, ViewOutput] = {o.view: o for o in self.dataflow.outputs}
        self.coalesce = coalesce
        self._fifo: deque[list] = deque()                     # unshuffled: one global FIFO
        self._channels: dict[tuple[int, int], deque[list]] = {}  # shuffled: one FIFO per channel
        self._pending: dict[tuple, list] = {}                 # queued INS by (channel, op, tuple)
        self._ready: list[tuple[int, int]] = []
        self._rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
        # unshuffled and coalescing: one inbox per (node, operator), delivered as a whole
        self._batched = shuffle_seed is None and coalesce
        self._inboxes: dict[tuple[int, str], _Inbox] = {}
        self._ready_boxes: deque[tuple[int, str]] = deque()
        self.facts: dict[str, BaseFact] = {}
        #: where the live variables sit in the BDD order (imposed unless ``reorder`` is True)
        self.placement = VariablePlacement(k=self.choices.k, strategy=variable_order)
        #: the placement was built when an older state without one was loaded: the formulas
        #: stored before are in another order until the views are next rewritten
        self.placement_migrated = False
        self.metrics = RuntimeMetrics.for_nodes(partitions)
        #: a state the path kernel wrote was loaded: the reference path operators derived it
        self._paths_rederived = False
        #: likewise for the region kernel's state and the reference region operators
        self._regions_rederived = False

    # -- public API --------------------------------------------------------------------------
    @property
    def live_vars(self) -> set[str]:
        """The live base variables (insertion instances not deleted)."""
        return set(self.facts)

    @property
    def mode(self) -> str:
        return self.choices.mode

    def apply(self, batch: Batch, deltas: bool = True,
              exact: bool = False) -> dict[str, ViewDelta]:
        """Apply one batch (deletions first, then insertions) and run to quiescence; returns
        each view's tuples inserted and deleted (none without ``deltas``: a caller that diffs
        the views itself saves reading them twice). ``exact``: the caller flushes right after
        (the maintainer does, every batch), so the compiled kernels derive eagerly at once
        rather than buffer alternatives the flush would ship: the same formulas, less work."""
        start = time.perf_counter()
        self._check(batch)
        tracked = {v: self._tracked_stores(v) for v in self.views
                   if v not in self.native} if deltas else {}
        before = {v: set(self._read(v)) for v in tracked if not tracked[v]}
        for stores in tracked.values():
            for store in stores:
                store.track_membership()
        if deltas:
            for kernel in self._kernels:
                kernel.track_membership()
        dead = frozenset(v for v in batch.deletes if v in self.facts)
        self.placement.apply([(f.var, f.relation, f.values) for f in batch.inserts], dead)
        if dead:
            self._broadcast_deletion(dead)
        if batch.inserts and self.reorder is not True:
            self.manager.place(self.placement.order)  # declares the new variables in place
        for fact in batch.inserts:
            self._insert(fact)
        for kernel in self._kernels:
            kernel.insert(batch.inserts)
        self._quiesce()
        for kernel in self._kernels:
            if exact:
                kernel.flush()  # an eager run of the batch's derivations
            else:
                kernel.run()
        self.metrics.batches += 1
        self.metrics.wall_s += time.perf_counter() - start
        out: dict[str, ViewDelta] = {}
        if deltas:
            for v, native in self.native.items():
                out[v] = ViewDelta(*native.delta())
        for v in tracked:
            if tracked[v]:
                out[v] = _membership_delta(tracked[v])
            else:
                after = set(self._read(v))
                out[v] = ViewDelta(after - before[v], before[v] - after)
        return out

    def _tracked_stores(self, view: str) -> list[ProvenanceStore]:
        """The stores whose keys are the view's tuples (one per node), when the view is read
        straight from a Fixpoint: its delta is then found from the keys that came or went,
        not by reading the whole view twice. Empty for the other readers."""
        spec = self._outputs[view]
        if spec.reader != "fixpoint":
            return []
        return [ops[spec.ops[0]].store for ops in self.nodes]

    def relabel(self) -> int:
        """Move every live variable to its ideal place (placement and manager); returns how many
        moved. Every formula that mentions a moved variable changes its node list, so call it
        where the views are rewritten anyway (compaction).

        >>> from aspen.engine.batch import Batch, BaseFact
        >>> rt = LocalRuntime(views=("reachable",), partitions=1, backend="python")
        >>> _ = rt.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "v1"),
        ...                             BaseFact("link", ("e", "f", 1.0), "v2"),
        ...                             BaseFact("link", ("c", "d", 1.0), "v3"))))
        >>> _ = rt.apply(Batch(inserts=(BaseFact("link", ("b", "c", 1.0), "v4"),)))
        >>> rt.manager.order, rt.relabel(), rt.manager.order
        (['v1', 'v4', 'v2', 'v3'], 1, ['v1', 'v4', 'v3', 'v2'])
        """
        moved = self.placement.relabel()
        if moved and self.reorder is not True:
            self.manager.place(self.placement.order)
        return len(moved)

    def flush(self) -> None:
        """Ship every MinShip buffer and run to quiescence (exact provenance in lazy mode)."""
        start = time.perf_counter()
        self._drain()
        while self._fire_timer():
            self._drain()
        for kernel in self._kernels:  # lazy kernels buffer alternatives too
            kernel.flush()
        self.metrics.wall_s += time.perf_counter() - start

    def index_provenance(self, incremental: bool = False) -> int:
        """Bring every store's deletion index up to date now; returns the entries indexed.

        The index is otherwise built lazily by the first deletion that needs it, which then
        pays for every entry the batches before it changed (after a large build: most of the
        state). A caller that wants deletion latency without that can index once after the
        build; a benchmark reports the time separately. ``incremental`` indexes only the stores
        whose index is mostly up to date (a restored store, whose deletions scan its entries
        with the compiled walk instead, stays as it is)."""
        indexed = sum(kernel.index() for kernel in self._kernels)
        return indexed + sum(store.refresh_index() for ops in self.nodes for op in ops.values()
                             for store in op.stores()
                             if not incremental or store.scan is None or store.mostly_indexed())

    def view(self, name: str) -> dict[tuple, Formula | None]:
        """The view's tuples → formula (a support formula or None for aggregates; see views)."""
        check_view(name)
        if name not in self._outputs and name not in self.native:
            raise UnknownViewError(
                f"view {name!r} is not maintained by this runtime (views: {', '.join(self.views)})"
            )
        return self._read(name)

    def view_by_node(self, name: str) -> tuple[dict[tuple, Formula | None], dict[tuple, int]]:
        """:meth:`view` and :meth:`view_placement` in one read of the nodes."""
        if name not in self._outputs:
            self.view(name)  # raises: not a view, or not one this runtime maintains
        native = self.native.get(name)
        if native is not None:  # one pass: a row's node is the owner of its source
            rows = native.rows(None, self.partitions)
            return rows, {key: native.owner_of(key, self.partitions) for key in rows}
        formulas: dict[tuple, Formula | None] = {}
        placement: dict[tuple, int] = {}
        for index in range(self.partitions):
            for key, formula in self._read(name, nodes=(index,)).items():
                placement[key] = index
                old = formulas.get(key)
                formulas[key] = formula if old is None or formula is None else old | formula
        return formulas, placement

    def view_placement(self, name: str) -> dict[tuple, int]:
        """Which node holds each tuple of view ``name``."""
        self.view(name)  # validates the name
        native = self.native.get(name)
        if native is not None:
            return {key: native.owner_of(key, self.partitions)
                    for key, _f in native.formulas()}
        return {values: index for index in range(self.partitions)
                for values in self._read(name, nodes=(index,))}

    def state_bytes(self) -> int:
        """Estimated operator state (encoded provenance + tuple text), per node into metrics."""
        total = 0
        for index, ops in enumerate(self.nodes):
            sizes: dict[int, int] = {}
            node_total = 0
            for op in ops.values():
                for values, formula in op.formulas():
                    key = int(formula)
                    size = sizes.get(key)
                    if size is None:
                        size = sizes[key] = len(self.manager.encode(formula))
                    node_total += size + len(repr(values))
            self.metrics.nodes[index].state_bytes = node_total
            total += node_total
        for native in self.native.values():  # attributed to the node owning each row
            for values, formula in native.formulas():
                if formula is None:  # a count (region_sizes, largest_regions): no state
                    continue
                size = len(self.manager.encode(formula)) + len(repr(values))
                self.metrics.nodes[native.owner_of(values, self.partitions)].state_bytes += size
                total += size
        return total

    def operator(self, node: int, name: str) -> Operator:
        """The instance of operator ``name`` on ``node`` (for tests and inspection)."""
        return self.nodes[node][name]

    # -- persistence -------------------------------------------------------------------------
    def dump_state(self) -> bytes:
        """Every operator's state, the live facts and the metrics, as bytes (provenance via the
        byte codec, never ``to_expr``). Call between batches (channels are then empty)."""
        if self._fifo or self._ready or self._ready_boxes:
            raise EngineError("dump_state needs a quiescent runtime (messages are in flight)")
        codec = FormulaCodec(self.manager)
        nodes = [{name: op.dump_state(codec) for name, op in ops.items()} for ops in self.nodes]
        native = {view: kernel.dump(codec) for view, kernel in self.native.items()}
        payload = {
            "version": _STATE_VERSION,
            "views": self.views,
            "choices": self.choices,
            "partitions": self.partitions,
            "shuffle_seed": self.shuffle_seed,
            "rng": self._rng.getstate() if self._rng else None,
            "measure_bytes": self.measure_bytes,
            "coalesce": self.coalesce,
            "reorder": self.reorder,
            "order": self.manager.order,
            "facts": list(self.facts.values()),
            "placement": self.placement,
            "metrics": self.metrics,
            "formulas": codec.export(),
            "nodes": nodes,
            "native": native,
        }
        return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def load_state(cls, data: bytes, backend: str | None = None,
                   core: str = "auto") -> LocalRuntime:
        """Rebuild a runtime from :meth:`dump_state` bytes (read through :mod:`aspen.state_pickle`).

        The state may have been written by either core: a view the state holds as reference
        operators and this runtime runs natively (or the other way round) is converted."""
        payload = read_state_payload(data, _STATE_VERSION, "local-runtime state")
        rt = cls(views=payload["views"], partitions=payload["partitions"], backend=backend,
                 shuffle_seed=payload["shuffle_seed"], measure_bytes=payload["measure_bytes"],
                 choices=payload["choices"], coalesce=payload["coalesce"],
                 reorder=payload["reorder"], core=core)
        if payload["rng"] is not None and rt._rng is not None:
            rt._rng.setstate(payload["rng"])
        placement = payload.get("placement")
        if placement is None:  # a state from before placements (arrival order): build one
            placement = VariablePlacement.build(
                ((f.var, f.relation, f.values) for f in payload["facts"]), k=rt.choices.k)
            rt.placement_migrated = True
        if rt.placement_migrated and rt.reorder is not True:
            # declared in the new order before decoding: rebuilding the stored formulas in it
            # is about twice as fast as decoding them as stored and shuffling the manager
            rt.manager.place(placement.order)
        elif payload["order"]:
            rt.manager.set_order(payload["order"])
        codec = FormulaCodec(rt.manager, payload["formulas"])
        for ops, states in zip(rt.nodes, payload["nodes"], strict=True):
            for name, state in states.items():
                if name in ops:  # else: a view this runtime runs natively (below)
                    ops[name].load_state(state, codec)
        stored_native = payload.get("native", {})
        for view, kernel in rt.native.items():
            if view in stored_native:
                kernel.load(stored_native[view], codec, payload["facts"])
            else:  # written by the reference operators
                kernel.restore(kernel.reference_rows(payload["nodes"], codec), payload["facts"])
        for view, state in stored_native.items():
            if view not in rt.native:  # written by the compiled core, run by the reference
                rows = ([] if view in PATH_VIEW_NAMES or view in REGION_VIEW_NAMES
                        else codec.load_map(state))
                rt._restore_reference(view, rows, payload["facts"])
        rt.facts = {f.var: f for f in payload["facts"]}
        rt.metrics = payload["metrics"]
        rt.placement = placement
        return rt

    def _rederive_paths(self, facts: list[BaseFact]) -> None:
        """Fill the reference path operators by deriving again from the live link facts (once;
        the other views' operators, restored already, do not see them), to quiescence."""
        if self._paths_rederived:
            return
        self._paths_rederived = True
        routes = [(r, rule) for r, rule in self._sources.get("link", [])
                  if r.target.startswith("path.")]
        var = self.manager.var
        for fact in facts:
            if fact.relation == "link":
                self._route_with(owner(fact.values[0], self.partitions), routes,
                                 [Update(INS, "link", tuple(fact.values), var(fact.var))])
        self._quiesce()

    def _rederive_regions(self, facts: list[BaseFact]) -> None:
        """Fill the reference region operators by deriving again from the live sensor,
        triggered and seed facts (once; only region operators read them), to quiescence."""
        if self._regions_rederived:
            return
        self._regions_rederived = True
        var = self.manager.var
        for fact in facts:
            routes = self._sources.get(fact.relation)
            if routes and fact.relation != "link":
                self._route_with(owner(fact.values[0], self.partitions), routes,
                                 [Update(INS, fact.relation, tuple(fact.values), var(fact.var))])
        self._quiesce()

    def _restore_reference(self, view: str, rows: list[tuple[tuple, Formula]],
                           facts: list[BaseFact]) -> None:
        """Fill ``view``'s reference operators from rows the compiled core wrote: the Fixpoint
        of each row's owner, the recursive join's key index, and its link side from the live
        link facts (MinShips start empty: their next derivation of a tuple ships)."""
        if view in PATH_VIEW_NAMES:  # the path kernel dumps no rows: derive them again
            self._rederive_paths(facts)
            return
        if view in REGION_VIEW_NAMES:  # nor does the region kernel
            self._rederive_regions(facts)
            return
        if view != "reachable":
            raise EngineError(f"no reference restore of {view!r} from the compiled core")
        var = self.manager.var
        for key, formula in rows:
            ops = self.nodes[owner(key[0], self.partitions)]
            ops["reachable.fix"].store.set(key, formula)
            left = ops["reachable.join"].sides["left"]
            left.h.setdefault(left.key(key), set()).add(key)
        for fact in facts:
            if fact.relation != "link":
                continue
            values = tuple(fact.values)
            right = self.nodes[owner(values[1], self.partitions)]["reachable.join"].sides["right"]
            right.store.add(values, var(fact.var))
            right.h.setdefault(right.key(values), set()).add(values)

    def _share_states(self) -> None:
        """A join side fed only by a co-located Fixpoint (a local route, no rule, no base
        source) uses the Fixpoint's provenance map instead of keeping a copy of it."""
        feeders: dict[tuple[str, str], list[tuple[str, Route]]] = {}
        for spec in self.dataflow.ops:
            for route in spec.routes:
                feeders.setdefault((route.target, route.port), []).append((spec.name, route))
        for src in self.dataflow.sources:
            for route in src.routes:
                feeders.setdefault((route.target, route.port), []).append(("", route))
        kinds = {spec.name: spec.kind for spec in self.dataflow.ops}
        for (target, port), feeds in feeders.items():
            if kinds.get(target) != "join" or len(feeds) != 1:
                continue
            name, route = feeds[0]
            if kinds.get(name) != "fixpoint" or route.by != "local" or route.rule:
                continue
            for ops in self.nodes:
                join, fixpoint = ops[target], ops[name]
                if isinstance(join, PipelinedHashJoin) and isinstance(fixpoint, Fixpoint):
                    join.share_state(port, fixpoint.store)

    # -- batches -----------------------------------------------------------------------------
    def _check(self, batch: Batch) -> None:
        seen: set[str] = set()
        for fact in batch.inserts:
            layout = BASE_RELATIONS.get(fact.relation)
            if layout is None:
                raise EngineError(
                    f"unknown base relation {fact.relation!r}; known: {sorted(BASE_RELATIONS)}"
                )
            if len(fact.values) != len(layout):
                raise EngineError(
                    f"{fact.relation} takes {len(layout)} values {layout}, got {fact.values!r}"
                )
            if fact.var in self.facts and fact.var not in batch.deletes or fact.var in seen:
                raise EngineError(f"variable {fact.var!r} is already live; every insertion "
                                  "instance needs a fresh variable")
            seen.add(fact.var)

    def _broadcast_deletion(self, dead: frozenset[str]) -> None:
        origins: dict[int, int] = {}
        for var in dead:
            node = owner(self.facts[var].values[0], self.partitions)
            origins[node] = origins.get(node, 0) + 1
        for node in origins:  # one notice from each origin to every other node
            m = self.metrics.nodes[node]
            m.messages += self.partitions - 1
            m.deletion_notices += self.partitions - 1
        for index, ops in enumerate(self.nodes):
            started = time.perf_counter()
            for name in self._op_order:
                outs = ops[name].delete_vars(dead)
                if outs:
                    self._route(index, name, outs)
            self.metrics.nodes[index].time_s += time.perf_counter() - started
        for kernel in self._kernels:
            kernel.delete_vars(dead)
        for var in dead:
            del self.facts[var]

    def _insert(self, fact: BaseFact) -> None:
        self.facts[fact.var] = fact
        routes = self._sources.get(fact.relation)
        pv = self.manager.var(fact.var)
        if not routes:
            return
        node = owner(fact.values[0], self.partitions)
        self._route_with(node, routes, [Update(INS, fact.relation, tuple(fact.values), pv)])

    # -- message passing ---------------------------------------------------------------------
    @staticmethod
    def _route_rule(route: Route) -> Callable[[tuple], Any] | None:
        if route.rule is None or route.rule == "":
            return None
        return resolve_rule((route.rule, route.rule_params))

    def _route(self, node: int, op_name: str, outs: list[Update]) -> None:
        self._route_with(node, self._routes[op_name], outs)

    def _route_with(self, node: int, routes: list[tuple[Route, Callable | None]],
                    outs: list[Update]) -> None:
        partitions = self.partitions
        if self._batched and len(routes) == 1 and routes[0][0].by == "local" \
                and routes[0][1] is None:  # the common hop (join → MinShip): straight in
            port = routes[0][0].port
            self._inbox(node, routes[0][0].target).items.extend(
                [(port, u) for u in outs if u.op == INS or not u.deleted])
            return
        for update in outs:
            if update.op == DEL and update.deleted:
                continue  # every node restricted itself (broadcast); nothing to ship
            for route, fn in routes:
                if fn is not None:
                    values = fn(update.tuple)
                    if values is None:
                        continue
                    message = Update(update.op, update.relation, values, update.pv, update.deleted)
                else:
                    values = update.tuple
                    message = update
                by = route.by
                if by == "local":
                    self._send(node, node, route.target, route.port, message)
                elif by == "owner":
                    self._send(node, owner(values[route.attr], partitions), route.target,
                               route.port, message)
                elif by == "broadcast":
                    for dest in range(partitions):
                        self._send(node, dest, route.target, route.port, message)
                else:  # "node"
                    self._send(node, route.attr % partitions, route.target, route.port, message)

    def _send(self, src: int, dst: int, target: str, port: str, update: Update) -> None:
        if self._batched:
            self._post(src, dst, target, port, update)
            return
        # Messages are counted when delivered, so that an INS merged into a queued INS of the
        # same tuple for the same operator (``coalesce``) ships once, with the OR-ed provenance.
        key = (src, dst, target, port, update.tuple)
        pending = self._pending
        if update.op == INS:
            if self.coalesce:
                queued = pending.get(key)
                if queued is not None:
                    merged = queued[4]
                    queued[4] = Update(INS, merged.relation, merged.tuple, merged.pv | update.pv)
                    self.metrics.nodes[src].coalesced += 1
                    return
        else:
            pending.pop(key, None)  # later INS must not jump over this retraction
        item = [src, dst, target, port, update]
        if update.op == INS and self.coalesce:
            pending[key] = item
        if self._rng is None:
            self._fifo.append(item)
            return
        channel = (src, dst)
        queue = self._channels.get(channel)
        if queue is None:
            queue = self._channels[channel] = deque()
        if not queue:
            self._ready.append(channel)
        queue.append(item)

    def _inbox(self, dst: int, target: str) -> _Inbox:
        box_key = (dst, target)
        box = self._inboxes.get(box_key)
        if box is None:
            box = self._inboxes[box_key] = _Inbox()
            self._ready_boxes.append(box_key)
        return box

    def _post(self, src: int, dst: int, target: str, port: str, update: Update) -> None:
        """Queue ``update`` in the inbox of operator ``target`` on node ``dst``. A remote INS
        merges into an INS of the same tuple queued on the same channel and port
        (``coalesced``), unless a DEL of that tuple was queued after it."""
        box = self._inbox(dst, target)
        if src == dst:  # local: no channel to save; the operator absorbs derivations one by one
            box.items.append((port, update))
            return
        key = (src, port, update.tuple)
        if update.op == INS:
            queued = box.pending.get(key)
            if queued is not None:
                merged = queued[1]
                queued[1] = Update(INS, merged.relation, merged.tuple, merged.pv | update.pv)
                self.metrics.nodes[src].coalesced += 1
                return
            item = [port, update]
            box.pending[key] = item
        else:
            box.pending.pop(key, None)
            item = [port, update]
        box.items.append(item)
        box.remote.append((src, item))

    def _drain_batched(self) -> None:
        """Deliver whole inboxes, oldest first: each operator consumes everything queued for
        it at once (:meth:`Operator.process_batch`), so the derivations of one tuple that reached
        it meanwhile are OR-ed and processed once (semi-naive by rounds per operator)."""
        nodes = self.nodes
        node_metrics = self.metrics.nodes
        clock = time.perf_counter
        measure = self.measure_bytes
        encode = self.manager.encode
        inboxes = self._inboxes
        ready = self._ready_boxes
        while ready:
            box_key = ready.popleft()
            box = inboxes.pop(box_key)
            dst, target = box_key
            items = box.items
            for src, (_port, update) in box.remote:
                sender = node_metrics[src]
                sender.messages += 1
                sender.tuples += 1
                if measure and update.pv is not None:
                    sender.prov_bytes += len(encode(update.pv))
            node_metrics[dst].local_deliveries += len(items) - len(box.remote)
            started = clock()
            outs = nodes[dst][target].process_batch(items)
            if outs:
                self._route(dst, target, outs)
            m = node_metrics[dst]
            m.processed += len(items)
            m.time_s += clock() - started

    def _next(self) -> list | None:
        if self._rng is None:
            return self._fifo.popleft() if self._fifo else None
        if not self._ready:
            return None
        i = self._rng.randrange(len(self._ready))
        channel = self._ready[i]
        queue = self._channels[channel]
        item = queue.popleft()
        if not queue:
            self._ready[i] = self._ready[-1]
            self._ready.pop()
        return item

    def _drain(self) -> None:
        if self._batched:
            self._drain_batched()
            return
        nodes = self.nodes
        node_metrics = self.metrics.nodes
        pending = self._pending
        clock = time.perf_counter
        measure = self.measure_bytes
        encode = self.manager.encode
        while True:
            item = self._next()
            if item is None:
                return
            src, dst, target, port, update = item
            if update.op == INS and pending:
                key = (src, dst, target, port, update.tuple)
                if pending.get(key) is item:
                    del pending[key]
            sender = node_metrics[src]
            if src != dst:
                sender.messages += 1
                sender.tuples += 1
                if measure and update.pv is not None:
                    sender.prov_bytes += len(encode(update.pv))
            else:
                sender.local_deliveries += 1
            started = clock()
            outs = nodes[dst][target].process(port, update)
            if outs:
                self._route(dst, target, outs)
            m = node_metrics[dst]
            m.processed += 1
            m.time_s += clock() - started

    def _fire_timer(self) -> bool:
        """Flush every buffering operator once; True if anything was shipped."""
        shipped = False
        for index, ops in enumerate(self.nodes):
            for name in self._op_order:
                op = ops[name]
                if op.pending():
                    outs = op.flush()
                    if outs:
                        shipped = True
                        self._route(index, name, outs)
        if shipped:
            self.metrics.flush_rounds += 1
        return shipped

    def _quiesce(self) -> None:
        self._drain()
        if self.choices.mode == "eager":
            while self._fire_timer():
                self._drain()

    # -- reading views -----------------------------------------------------------------------
    def _read(self, name: str, nodes: Iterable[int] | None = None) -> dict[tuple, Formula | None]:
        native = self.native.get(name)
        if native is not None:
            return dict(native.rows(nodes, self.partitions))
        spec = self._outputs[name]
        reader = spec.reader
        with_formulas = spec.param("formulas", True)
        out: dict[tuple, Formula | None] = {}

        def put(key: tuple, formula: Formula) -> None:
            if not with_formulas:
                out[key] = None
                return
            old = out.get(key)
            out[key] = formula if old is None else old | formula

        for ops in (self.nodes if nodes is None else [self.nodes[i] for i in nodes]):
            if reader == "fixpoint":
                for key, formula in ops[spec.ops[0]].formulas():
                    put(key, formula)
            elif reader == "aggregate":
                for key, formula in ops[spec.ops[0]].rows().items():
                    put(key, formula)
            elif reader == "argbest":
                sel = ops[spec.ops[0]]
                project = spec.param("project")
                for bests in sel.best.values():
                    for _value, tied in bests:
                        for values in tied:
                            key = tuple(values[i] for i in project) if project else values
                            put(key, sel.store[values])
            elif reader == "pairs":
                cheap, few = ops[spec.ops[0]], ops[spec.ops[1]]
                for group, cheap_bests in cheap.best.items():
                    few_bests = few.best.get(group)
                    if not few_bests:
                        continue
                    for c in cheap_bests[0][1]:
                        for f in few_bests[0][1]:
                            put((c[0], c[1], c[2], c[3], f[2], f[4]),
                                cheap.store[c] & few.store[f])
            else:
                raise EngineError(f"unknown view reader {reader!r}")
        return out
