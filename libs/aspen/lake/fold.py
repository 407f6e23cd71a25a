"""The per-key fold of apply: one tuple key's live instances + its new updates → changes.

Pure Python and pandas: :func:`fold_sorted` runs inside ``mapInPandas`` on the executors over
partitions sorted by key, folding many keys per call; :func:`fold_key` folds one key's frame
(unit tests, without Spark). Semantics (decision 4, docs/architecture.md):

- insert of a key with no live instance → a new instance, variable ``v{seq}``;
- insert of a live key with the same values → renewal: a new instance beside the old ones;
- insert of a live key with other values (link cost, sensor position) → replacement: every live
  instance dies (``death = "replaced"``), then the new one is born;
- delete of a live key → every live instance dies (``death = "deleted"``);
- delete of a key with no live instance → a note, nothing else.

Times: an instance is inserted at its record's ``event_time`` (or ``ingested_at`` when absent) and
expires ``ttl_s`` seconds later; a death happens at the killing record's time.

>>> import pandas as pd
>>> ups = pd.DataFrame([
...     {"kind": 1, "relation": "link", "key": '["a","b"]', "seq": 1, "batch_id": 1, "op": "insert",
...      "src": "a", "dst": "b", "cost": 1.0, "ttl_s": None, "event_time": None,
...      "ingested_at": pd.Timestamp("2026-01-01")},
...     {"kind": 1, "relation": "link", "key": '["a","b"]', "seq": 2, "batch_id": 1, "op": "insert",
...      "src": "a", "dst": "b", "cost": 5.0, "ttl_s": 60.0, "event_time": None,
...      "ingested_at": pd.Timestamp("2026-01-01")}])
>>> out = fold_key(ups)
>>> out[["var", "death", "values"]].values.tolist()
[['v1', 'replaced', '["a","b",1.0]'], ['v2', None, '["a","b",5.0]']]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd

from aspen.lake.tables import BASE_VALUE_COLUMNS

__all__ = ["FOLD_OUTPUT_DDL", "FOLD_OUTPUT_COLUMNS", "describe_key", "fold_key", "fold_sorted"]

#: Columns of the fold's output: registry columns, typed value columns, the row kind and notes.
FOLD_OUTPUT_DDL = (
    "row_kind STRING, var STRING, relation STRING, key STRING, `values` STRING, "
    "inserted_batch BIGINT, inserted_seq BIGINT, inserted_at TIMESTAMP, expires_at TIMESTAMP, "
    "deleted_batch BIGINT, deleted_seq BIGINT, deleted_at TIMESTAMP, death STRING, born BOOLEAN, "
    "src STRING, dst STRING, cost DOUBLE, id STRING, x DOUBLE, y DOUBLE, region STRING, "
    "note_batch BIGINT, note_seq BIGINT, note STRING"
)
FOLD_OUTPUT_COLUMNS: tuple[str, ...] = tuple(
    part.split()[0].strip("`") for part in FOLD_OUTPUT_DDL.split(",")
)

_NUMERIC = {"cost", "x", "y"}


def _absent(value: Any) -> bool:
    return value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value))


def _values_json(values: tuple) -> str:
    return json.dumps(list(values), separators=(",", ":"))


def describe_key(relation: str, key: tuple) -> str:
    """A tuple key as people write it.

    >>> describe_key("link", ("n1", "n9")), describe_key("region_seed", ("r1", "s2"))
    ('link n1→n9', 'region_seed (r1, s2)')
    """
    if relation == "link":
        return f"link {key[0]}→{key[1]}"
    if len(key) == 1:
        return f"{relation} {key[0]}"
    return f"{relation} ({', '.join(map(str, key))})"


def fold_key(group: pd.DataFrame) -> pd.DataFrame:
    """Fold one key's rows (``kind`` 0: live instance, 1: update) into its changes.

    Live-instance rows carry ``var``, ``values`` (JSON), ``seq``/``batch_id`` (of their birth),
    ``inserted_at`` and ``expires_at``; update rows carry the log's columns. The output has
    :data:`FOLD_OUTPUT_COLUMNS`: one ``instance`` row per instance born or killed here and one
    ``note`` row per ignored delete.
    """
    return _frame(_fold_rows(group.to_dict("records")))


def fold_sorted(frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """Fold a stream of rows sorted by (``relation``, ``key``) — a partition of the fold's input
    after ``sortWithinPartitions`` — key by key, as :func:`fold_key` folds each; a key's rows may
    run on over several frames of the stream. One output frame per input frame that completes
    a key.

    >>> import pandas as pd
    >>> def insert(seq, src):
    ...     return {"kind": 1, "relation": "link", "key": f'["{src}","b"]', "seq": seq,
    ...             "batch_id": 1, "op": "insert", "src": src, "dst": "b", "cost": 1.0,
    ...             "ttl_s": None, "event_time": None, "ingested_at": pd.Timestamp("2026-01-01")}
    >>> stream = [pd.DataFrame([insert(1, "a"), insert(2, "c")]), pd.DataFrame([insert(3, "c")])]
    >>> [frame["var"].tolist() for frame in fold_sorted(stream)]
    [['v1'], ['v2', 'v3']]
    """
    pending: list[dict[str, Any]] = []  # the rows of the key the last frame ended in
    for frame in frames:
        out: list[dict[str, Any]] = []
        for row in frame.to_dict("records"):
            if pending and (row["relation"], row["key"]) != (
                    pending[0]["relation"], pending[0]["key"]):
                out += _fold_rows(pending)
                pending = []
            pending.append(row)
        if out:
            yield _frame(out)
    if pending:
        yield _frame(_fold_rows(pending))


def _fold_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`fold_key` on the records of one key, giving output records."""
    relation = str(rows[0]["relation"])
    key_json = str(rows[0]["key"])
    layout = BASE_VALUE_COLUMNS[relation]

    live: list[dict[str, Any]] = []
    touched: dict[str, dict[str, Any]] = {}
    notes: list[dict[str, Any]] = []
    for row in sorted(rows, key=lambda r: (int(r["kind"]), int(r["seq"]))):
        if int(row["kind"]) == 0:
            instance = {
                "var": row["var"],
                "values": tuple(json.loads(row["values"])),
                "inserted_batch": int(row["batch_id"]),
                "inserted_seq": int(row["seq"]),
                "inserted_at": row["inserted_at"],
                "expires_at": None if _absent(row.get("expires_at")) else row["expires_at"],
                "born": False,
            }
            live.append(instance)
            continue
        seq, batch = int(row["seq"]), int(row["batch_id"])
        when = row["ingested_at"] if _absent(row.get("event_time")) else row["event_time"]
        if row["op"] == "insert":
            values = tuple(
                float(row[name]) if name in _NUMERIC else str(row[name]) for name in layout
            )
            if live and live[0]["values"] != values:
                _kill(live, touched, batch, seq, when, "replaced")
            ttl = row.get("ttl_s")
            instance = {
                "var": f"v{seq}",
                "values": values,
                "inserted_batch": batch,
                "inserted_seq": seq,
                "inserted_at": when,
                "expires_at": None if _absent(ttl) else when + pd.Timedelta(seconds=float(ttl)),
                "born": True,
            }
            live.append(instance)
            touched[instance["var"]] = instance
        elif live:
            _kill(live, touched, batch, seq, when, "deleted")
        else:
            key = tuple(json.loads(key_json))
            notes.append({
                "row_kind": "note", "relation": relation, "key": key_json,
                "note_batch": batch, "note_seq": seq,
                "note": f"delete of {describe_key(relation, key)} ignored: not live",
            })
    out: list[dict[str, Any]] = []
    for instance in touched.values():
        record = {
            "row_kind": "instance", "relation": relation, "key": key_json,
            "var": instance["var"], "values": _values_json(instance["values"]),
            "inserted_batch": instance["inserted_batch"], "inserted_seq": instance["inserted_seq"],
            "inserted_at": instance["inserted_at"], "expires_at": instance["expires_at"],
            "deleted_batch": instance.get("deleted_batch"),
            "deleted_seq": instance.get("deleted_seq"),
            "deleted_at": instance.get("deleted_at"), "death": instance.get("death"),
            "born": instance["born"],
        }
        record.update(dict(zip(layout, instance["values"], strict=True)))
        out.append(record)
    return out + notes


def _frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Output records as a frame of :data:`FOLD_OUTPUT_DDL`'s columns and types."""
    frame = pd.DataFrame(records, columns=list(FOLD_OUTPUT_COLUMNS))
    for name in ("inserted_batch", "inserted_seq", "deleted_batch", "deleted_seq",
                 "note_batch", "note_seq", "born", "row_kind", "var", "relation", "key",
                 "values", "death", "src", "dst", "id", "region", "note"):
        frame[name] = [None if _absent(v) else v for v in frame[name]]  # object: values/None
        frame[name] = frame[name].astype(object)
    for name in ("inserted_at", "expires_at", "deleted_at"):
        # microseconds, as Delta keeps them: a fractional ttl_s gives nanoseconds in pandas,
        # which Arrow refuses to narrow to Spark's timestamp (a wedged apply)
        frame[name] = pd.to_datetime(frame[name]).dt.floor("us")
    for name in ("cost", "x", "y"):
        frame[name] = frame[name].astype("float64")
    return frame


def _kill(
    live: list[dict[str, Any]],
    touched: dict[str, dict[str, Any]],
    batch: int,
    seq: int,
    when: Any,
    death: str,
) -> None:
    """Every live instance dies at (batch, seq, when)."""
    for instance in live:
        instance.update(deleted_batch=batch, deleted_seq=seq, deleted_at=when, death=death)
        touched[instance["var"]] = instance
    live.clear()
