"""What a Spark task runs for one query node: a round, or publishing its views.

Every DataFrame of the Spark runtime has one schema, :data:`ROUND_DDL`; a row's ``kind`` says
what it is:

=========  ==========================================================================
``state``  a node's operator state: ``payload`` its state bytes at its last compaction,
           ``journal`` the rounds it ran and the publishes since (:mod:`aspen.engine.rounds`);
           ``pending``: a MinShip buffer holds something; ``changed``: it ran this round
           (in a round's output) or was compacted at publish (in the publish's output)
``fact``   a base fact entering at ``node`` (``payload``: the pickled BaseFact)
``kill``   a dead variable ``name`` broadcast to ``node``
``msg``    a message from node ``src`` to ``node`` (``payload``: the encoded update)
``sent``   what node ``src`` sent ``node`` this round: ``name`` ``rows`` or ``bytes`` = ``value``
``stat``   a counter ``name`` = ``value`` of ``node`` for this round
``view``   a row of view ``name`` that ``node`` added or whose provenance changed
           (``payload``: the row as JSON; ``prov``: provenance bytes)
``drop``   a row of view ``name`` that ``node`` no longer holds (``payload``: JSON)
=========  ==========================================================================

``groupBy("node").applyInPandas(...)`` hands each function every row of one node.

>>> cfg = RoundConfig(partitions=1, views=("reachable",), choices=None, flush=False)
>>> import pandas as pd, pickle
>>> from aspen.engine.batch import BaseFact
>>> rows = pd.DataFrame([{"node": 0, "kind": "fact", "src": None, "name": None,
...     "payload": pickle.dumps(BaseFact("link", ("a", "b", 1.0), "v1")), "prov": None,
...     "pending": None, "changed": None, "value": None, "journal": None}])
>>> sorted(node_round(cfg, rows)["kind"].unique())
['stat', 'state']
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aspen.engine.partitioning import owner
from aspen.engine.plan import PlanChoices
from aspen.engine.rounds import (
    NodeCache,
    decode_journal,
    encode_journal,
    publish_node,
    step_node,
)
from aspen.pipeline.changes import fact_from_row
from aspen.pipeline.view_tables import PATH_COLUMNS, VIEW_COLUMNS

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pandas as pd

__all__ = ["ROUND_COLUMNS", "ROUND_DDL", "RoundConfig", "node_publish", "node_round",
           "route_facts"]

ROUND_DDL = (
    "node INT, kind STRING, src INT, name STRING, payload BINARY, prov BINARY, "
    "pending BOOLEAN, changed BOOLEAN, value DOUBLE, journal BINARY"
)
ROUND_COLUMNS = tuple(part.split()[0] for part in ROUND_DDL.split(", "))
#: Nodes restored by this Python worker (content-addressed: a hit skips decoding a state).
_CACHE = NodeCache()


@dataclass(frozen=True)
class RoundConfig:
    """What every node needs to know about the run (shipped to the tasks with the function)."""

    partitions: int
    views: tuple[str, ...]
    choices: PlanChoices | None
    flush: bool = False


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


def node_round(config: RoundConfig, rows: pd.DataFrame) -> pd.DataFrame:
    """One round of one node (all of ``rows`` share ``node``): see :func:`step_node`. The state
    row it returns keeps the state bytes it was given and the journal with this round appended,
    unless the node was compacted (dumped) into new bytes."""
    me = int(rows["node"].iloc[0])
    kind = rows["kind"]
    states = rows[kind == "state"]
    state = bytes(states["payload"].iloc[0]) if len(states) else None
    journal = _journal_bytes(states["journal"].iloc[0]) if len(states) else b""
    facts = [pickle.loads(bytes(p)) for p in rows.loc[kind == "fact", "payload"]]
    facts.sort(key=lambda f: _var_number(f.var))  # arrival order, as the local runtime
    dead = [str(v) for v in rows.loc[kind == "kill", "name"]]
    mail = rows[kind == "msg"]
    step = step_node(
        me, config.partitions, config.views, config.choices or PlanChoices(), state,
        journal=decode_journal(journal), dead=dead, facts=facts,
        inbox=[(int(s), bytes(p)) for s, p in zip(mail["src"], mail["payload"], strict=True)],
        flush=config.flush, cache=_CACHE,
    )
    journal = b"" if step.dumped else journal + encode_journal(step.journal[-1:])
    out = [_row(me, "state", payload=step.state, journal=journal, pending=step.pending,
                changed=True)]
    out += [_row(dst, "msg", src=me, payload=data) for dst, data in step.outbox]
    sent: dict[int, list[int]] = {}
    for dst, data in step.outbox:
        channel = sent.setdefault(dst, [0, 0])
        channel[0] += 1
        channel[1] += len(data)
    for dst, (count, size) in sent.items():
        out += [_row(dst, "sent", src=me, name="rows", value=float(count)),
                _row(dst, "sent", src=me, name="bytes", value=float(size))]
    out += [
        _row(me, "stat", name="processed", value=float(step.processed)),
        _row(me, "stat", name="time_s", value=step.seconds),
        _row(me, "stat", name="decode_s", value=step.decode_seconds),
        _row(me, "stat", name="decodes", value=float(step.decode_seconds > 0)),
        _row(me, "stat", name="replayed", value=float(step.replayed)),
        _row(me, "stat", name="dumps", value=float(step.dumped)),
        _row(me, "stat", name="kills", value=float(len(dead))),
        _row(me, "stat", name="facts", value=float(len(facts))),
    ]
    return _frame(out)


def _json_row(view: str, values: tuple) -> bytes:
    row = {c: (list(v) if c in PATH_COLUMNS else v)
           for c, v in zip(VIEW_COLUMNS[view], values, strict=True)}
    return json.dumps(row).encode()


def node_publish(rows: pd.DataFrame) -> pd.DataFrame:
    """The view rows this node added or changed (``view``) and dropped (``drop``) since it last
    published, and the node state remembering them: the state bytes with the journal, the
    publish appended (``changed``: the journal was compacted into new bytes instead)."""
    me = int(rows["node"].iloc[0])
    state_row = rows[rows["kind"] == "state"].iloc[0]
    journal = _journal_bytes(state_row["journal"])
    entries = decode_journal(journal)
    published = publish_node(bytes(state_row["payload"]), cache=_CACHE, me=me, journal=entries)
    if published.dumped:
        journal = b""
    elif len(published.journal) > len(entries):
        journal += encode_journal(published.journal[len(entries):])
    out = [_row(me, "state", payload=published.state, journal=journal,
                pending=bool(state_row["pending"]), changed=published.dumped),
           _row(me, "stat", name="view_rows", value=float(published.view_rows)),
           _row(me, "stat", name="prov_bytes", value=float(published.prov_bytes)),
           _row(me, "stat", name="publish_dumps", value=float(published.dumped))]
    for view, (upserts, deletes) in published.changes.items():
        out += [_row(me, "view", name=view, payload=_json_row(view, values), prov=data)
                for values, data in upserts]
        out += [_row(me, "drop", name=view, payload=_json_row(view, values))
                for values in deletes]
    return _frame(out)
