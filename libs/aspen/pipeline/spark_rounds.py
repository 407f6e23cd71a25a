"""What a Spark task runs for one query node: a round, or publishing its views.

Every DataFrame of the Spark runtime has one schema, :data:`ROUND_DDL`; a row's ``kind`` says
what it is:

=========  ==========================================================================
``state``  a node's operator state: its state bytes at its last compaction — ``payload``
           when they were made this batch, else null (read from ``node_state`` by a task that
           must decode them) — with their ``digest`` and size (``value``); ``journal`` the
           rounds it ran and the publishes since (:mod:`aspen.runtime.rounds`); ``pending``: a
           MinShip buffer holds something; ``changed``: it ran this round (in a round's
           output) or was compacted at publish (in the publish's output)
``fact``   a base fact entering at ``node`` (``payload``: the pickled BaseFact)
``kill``   a dead variable ``name`` broadcast to ``node``
``msg``    the messages node ``src`` sent ``node`` in one step (``payload``: their bundle,
           :func:`~aspen.runtime.node.encode_messages`; ``value``: its place in the sender
           host's outbox, see :data:`~aspen.runtime.rounds.Mail`)
``sent``   what node ``src`` sent ``node`` this round: ``name`` ``rows`` or ``bytes`` = ``value``
``stat``   a counter ``name`` = ``value`` of ``node`` for this round
``view``   a row of view ``name`` that ``node`` added or whose provenance changed
           (``payload``: the row as JSON; ``prov``: provenance bytes)
``drop``   a row of view ``name`` that ``node`` no longer holds (``payload``: JSON)
=========  ==========================================================================

A round's ``groupBy`` on the host of ``node`` hands :func:`host_round` every row of one host's
nodes; the publish's, the state rows of one host's nodes to :func:`host_publish`, which runs
:func:`node_publish` for each.

>>> cfg = RoundConfig(partitions=1, views=("reachable",), choices=None, flush=False)
>>> import pandas as pd, pickle
>>> from aspen.engine.batch import BaseFact
>>> rows = pd.DataFrame([{"node": 0, "kind": "fact", "src": None, "name": None,
...     "payload": pickle.dumps(BaseFact("link", ("a", "b", 1.0), "v1")), "prov": None,
...     "pending": None, "changed": None, "value": None, "journal": None, "digest": None}])
>>> sorted(host_round(cfg, rows)["kind"].unique())
['stat', 'state']
"""

from __future__ import annotations

import functools
import json
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aspen import state_pickle
from aspen.catalog import VIEW_COLUMNS
from aspen.engine.partitioning import owner
from aspen.engine.plan import PlanChoices
from aspen.errors import EngineError
from aspen.pipeline.changes import fact_from_row
from aspen.pipeline.view_tables import PATH_COLUMNS
from aspen.runtime.rounds import (
    Mail,
    NodeCache,
    State,
    StoredState,
    decode_journal,
    encode_journal,
    host_of,
    publish_node,
    run_host,
    state_digest,
    state_size,
)
from aspen.spark.python_worker import prepare_worker

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import pandas as pd

__all__ = ["ROUND_COLUMNS", "ROUND_DDL", "SIZE_STAT", "RoundConfig", "host_publish", "host_round",
           "in_host_process", "node_publish",
           "read_stored_state", "route_facts"]

ROUND_DDL = (
    "node INT, kind STRING, src INT, name STRING, payload BINARY, prov BINARY, "
    "pending BOOLEAN, changed BOOLEAN, value DOUBLE, journal BINARY, digest BINARY"
)
ROUND_COLUMNS = tuple(part.split()[0] for part in ROUND_DDL.split(", "))
#: Prefix of a publish's ``stat`` row: how many rows a node's share of a view grew by.
SIZE_STAT = "rows:"
#: Nodes restored by this Python worker (content-addressed: a hit skips decoding a state).
_CACHE = NodeCache()


@dataclass(frozen=True)
class RoundConfig:
    """What every node needs to know about the run (shipped to the tasks with the function)."""

    partitions: int
    views: tuple[str, ...]
    choices: PlanChoices | None
    flush: bool = False
    #: where a stored node state is read on a cache miss: ``node_state``'s URI and version
    state_uri: str | None = None
    state_version: int | None = None
    compact_over: int | None = None  # a fixed journal budget instead of the policy
    #: Spark tasks a round runs the nodes on (:func:`~aspen.runtime.rounds.host_of`; None: one
    #: per node)
    hosts: int | None = None
    #: the Spark application whose host processes keep the nodes in memory
    #: (:mod:`aspen.spark.host_process`; None: the task's own Python worker)
    application: str | None = None
    #: the batch's variable order, top first (:mod:`aspen.provenance.placement`): every host's
    #: BDD manager takes it before its nodes declare the batch's variables
    order: tuple[str, ...] = ()


def in_host_process(config: RoundConfig, function: Callable[[RoundConfig, pd.DataFrame],
                                                            pd.DataFrame],
                    rows: pd.DataFrame) -> pd.DataFrame:
    """``function(config, rows)`` (:func:`host_round` or :func:`host_publish`) in the host
    process of the host of ``rows``' nodes, which keeps them in memory from task to task; in
    this Python worker when ``config.application`` is None."""
    prepare_worker()
    if config.application is None:
        return function(config, rows)
    from aspen.spark.host_process import run_on_host

    host = host_of(int(rows["node"].iloc[0]), config.hosts or config.partitions)
    return run_on_host(config.application, host, function, config, rows)


def read_stored_state(uri: str, version: int, node: int) -> bytes:
    """The base state bytes of ``node`` in version ``version`` of the ``node_state`` table at
    ``uri`` (delta-rs: one partition's file, no JVM)."""
    from deltalake import DeltaTable

    table = DeltaTable(uri, version=version).to_pyarrow_table(
        partitions=[("node", "=", str(node)), ("part", "=", "base")], columns=["data"])
    if table.num_rows != 1:
        raise EngineError(f"node_state version {version} holds {table.num_rows} bases of node "
                          f"{node}, not one")
    return bytes(table.column("data")[0].as_py())


def _state_in(config: RoundConfig, me: int, row: Any) -> State:
    """The state a ``state`` row stands for: its bytes, or the stored bytes by digest."""
    if row["payload"] is not None and not _missing(row["payload"]):
        return bytes(row["payload"])
    if row["digest"] is None or _missing(row["digest"]):
        return None
    if config.state_uri is None or config.state_version is None:
        raise EngineError(f"node {me}'s state is stored, but the round was not told where")
    return StoredState(bytes(row["digest"]), int(row["value"]), functools.partial(
        read_stored_state, config.state_uri, config.state_version, me))


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is pd.NA or (isinstance(value, float) and value != value)


def _state_out(state: State, **values: Any) -> dict[str, Any]:
    """The columns of a ``state`` row for ``state`` (bytes made this batch travel; stored
    bytes travel by digest)."""
    if isinstance(state, StoredState):
        return dict(payload=None, digest=state.digest, value=float(state.size), **values)
    return dict(payload=state, digest=None if state is None else state_digest(state),
                value=float(state_size(state)), **values)


def _row(node: int, kind: str, **values: Any) -> dict[str, Any]:
    row = dict.fromkeys(ROUND_COLUMNS)
    row.update(node=node, kind=kind, **values)
    return row


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(ROUND_COLUMNS))
    return frame.astype({"node": "int32", "src": "Int32", "pending": "boolean",
                         "changed": "boolean", "value": "float64"})


def route_facts(partitions: int, batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """``mapInPandas`` over registry rows (var, relation, values): a ``fact`` row for the node
    owning each instance's first value."""
    prepare_worker()
    for batch in batches:
        rows = []
        for record in batch.to_dict("records"):
            fact = fact_from_row(record)
            rows.append(_row(owner(fact.values[0], partitions), "fact",
                             payload=pickle.dumps(fact, protocol=pickle.HIGHEST_PROTOCOL)))
        yield _frame(rows)


def _var_number(var: str) -> int:
    digits = "".join(ch for ch in var if ch.isdigit())
    return int(digits) if digits else 0


def _journal_bytes(value: Any) -> bytes:
    """A state row's journal (null, as a stored state's, is empty)."""
    return bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else b""


def host_round(config: RoundConfig, rows: pd.DataFrame) -> pd.DataFrame:
    """One round of one host (every row's node lives on it: :func:`~aspen.runtime.rounds.host_of`)
    — :func:`~aspen.runtime.rounds.run_host`. The nodes with facts, dead variables or mail run,
    and in a flush round those whose state row is ``pending``; a node of the host that is sent
    mail by another runs in a later sub-round, so the driver hands a host the state rows of all
    its nodes. Every state row comes back: ``changed`` if its node ran (its journal extended by
    the sub-rounds it ran, or emptied when the node was compacted into new bytes), as given if
    not. Mail to other hosts leaves as ``msg`` rows; ``sent`` rows count it (``rows``,
    ``bytes``) and the mail delivered within the host (``local_rows``, ``local_bytes``).
    A Spark task calls it through :func:`in_host_process`, which prepares the worker."""
    hosts = config.hosts or config.partitions
    host = host_of(int(rows["node"].iloc[0]), hosts)
    kind = rows["kind"]
    given = {int(row["node"]): row for _, row in rows[kind == "state"].iterrows()}
    # run_host updates these two in place for the nodes it runs
    states = {me: _state_in(config, me, row) for me, row in given.items()}
    old_journals = {me: _journal_bytes(row["journal"]) for me, row in given.items()}
    journals = {me: decode_journal(data) for me, data in old_journals.items()}
    given_entries = {me: len(entries) for me, entries in journals.items()}
    facts: dict[int, list] = {}
    for me, data in zip(rows.loc[kind == "fact", "node"], rows.loc[kind == "fact", "payload"],
                        strict=True):
        facts.setdefault(int(me), []).append(state_pickle.loads(bytes(data), "a round's fact"))
    for node_facts in facts.values():
        node_facts.sort(key=lambda f: _var_number(f.var))  # arrival order, as the local runtime
    kills = rows[kind == "kill"]
    dead = sorted({str(v) for v in kills["name"]})
    mail = rows[kind == "msg"]
    inbox: dict[int, list[Mail]] = {}  # in no fixed order: run_host orders it
    for me, src, place, data in zip(mail["node"], mail["src"], mail["value"], mail["payload"],
                                    strict=True):
        inbox.setdefault(int(me), []).append((int(src), int(place), bytes(data)))
    first = set(facts) | set(inbox) | {int(n) for n in kills["node"]}
    if config.flush:
        first |= {me for me, row in given.items() if bool(row["pending"])}
    done = run_host(
        host, hosts, config.partitions, config.views, config.choices or PlanChoices(), states,
        journals, first, dead=dead, facts=facts, inbox=inbox, flush=config.flush, cache=_CACHE,
        compact_over=config.compact_over, order=config.order,
        # a resident host process keeps its nodes until the publish, which applies the time rule
        compact_by_time=config.application is None)

    out = []
    for me in sorted(set(given) | set(done.pending)):
        if me not in done.pending:
            row = given[me]
            out.append(_row(me, "state", **{c: row[c] for c in ROUND_COLUMNS
                                              if c not in ("node", "kind")}))
            continue
        counters = done.counters[me]
        entries = journals[me]  # the given journal and this round's sub-rounds, if not dumped
        journal = encode_journal(entries) if counters["dumps"] else \
            old_journals.get(me, b"") + encode_journal(entries[given_entries.get(me, 0):])
        out.append(_row(me, "state", **_state_out(states[me], journal=journal,
                                                 pending=done.pending[me], changed=True)))
        out += [_row(me, "stat", name=name, value=float(value))
                for name, value in sorted(counters.items())]
        out += [_row(me, "stat", name="kills", value=float(len(dead) if me in first else 0)),
                _row(me, "stat", name="facts", value=float(len(facts.get(me, ()))))]
    out += [_row(dst, "msg", src=src, value=float(place), payload=data)
            for place, (src, dst, data) in enumerate(done.outbox)]
    for prefix, channels in (("", done.shipped), ("local_", done.delivered)):
        for (src, dst), (count, size) in channels.items():
            out += [_row(dst, "sent", src=src, name=f"{prefix}rows", value=float(count)),
                    _row(dst, "sent", src=src, name=f"{prefix}bytes", value=float(size))]
    if done.pending:
        out.append(_row(min(done.pending), "stat", name="subrounds", value=float(done.subrounds)))
    return _frame(out)


def _json_row(view: str, values: tuple) -> bytes:
    row = {c: (list(v) if c in PATH_COLUMNS else v)
           for c, v in zip(VIEW_COLUMNS[view], values, strict=True)}
    return json.dumps(row).encode()


def host_publish(config: RoundConfig, rows: pd.DataFrame) -> pd.DataFrame:
    """:func:`node_publish` for each node of one host's ``state`` rows, in node order: the
    publish runs a task per host, as the rounds do (a task per node would queue on the host's
    process while the other host's sat idle)."""
    import pandas as pd

    return pd.concat([node_publish(config, node_rows)
                      for _, node_rows in rows.groupby("node", sort=True)], ignore_index=True)


def node_publish(config: RoundConfig, rows: pd.DataFrame) -> pd.DataFrame:
    """The view rows this node added or changed (``view``) and dropped (``drop``) since it last
    published, and the node state remembering them: the state bytes with the journal, the
    publish appended (``changed``: the journal was compacted into new bytes instead)."""
    me = int(rows["node"].iloc[0])
    state_row = rows[rows["kind"] == "state"].iloc[0]
    journal = _journal_bytes(state_row["journal"])
    entries = decode_journal(journal)
    published = publish_node(_state_in(config, me, state_row), cache=_CACHE, me=me,
                             journal=entries, compact_over=config.compact_over,
                             order=config.order)
    if published.dumped:
        journal = b""
    elif len(published.journal) > len(entries):
        journal += encode_journal(published.journal[len(entries):])
    out = [_row(me, "state", **_state_out(published.state, journal=journal,
                                         pending=bool(state_row["pending"]),
                                         changed=published.dumped)),
           _row(me, "stat", name="view_rows", value=float(published.view_rows)),
           _row(me, "stat", name="prov_bytes", value=float(published.prov_bytes)),
           _row(me, "stat", name="publish_dumps", value=float(published.dumped)),
           _row(me, "stat", name="publish_restores", value=float(published.restored))]
    out += [_row(me, "stat", name=f"{SIZE_STAT}{view}", value=float(grown))
            for view, grown in published.size_changes.items()]
    for view, (upserts, deletes) in published.changes.items():
        out += [_row(me, "view", name=view, payload=_json_row(view, values), prov=data)
                for values, data in upserts]
        out += [_row(me, "drop", name=view, payload=_json_row(view, values))
                for values in deletes]
    return _frame(out)
