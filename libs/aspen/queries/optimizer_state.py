"""The optimizers' state between runs: the Delta table ``optimizer_state``, one row per query.

Re-optimization is incremental across Airflow runs, not only within one: after a run the
query's optimizer — its and-or graph, costs, aggregates and pruning state — is saved with the
statistics it is at, and the next run loads it and applies only the statistics that moved
since. A row: ``query``, ``method``, ``query_json`` (the join graph the state is of),
``stats_json`` (the S.json the state is at, with each table's Delta-log row count
``log_rows`` for the due check), ``state`` (the optimizer, pickled), ``format``
(:data:`STATE_FORMAT`), ``saved_at``. Written by compare-and-swap
(:mod:`aspen.queries.keyed_table`).

Loading accepts only the optimizer's own classes (:mod:`aspen.state_pickle`: classes of
``aspen.optimizer`` and a few builtin containers; a pickle naming anything else is refused),
and any state that cannot be loaded — another format, a class renamed since — is treated as
none: the next run optimizes from scratch and says so.

>>> import tempfile
>>> from aspen.optimizer.methods import make_optimizer
>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> lake = Settings(lake=tempfile.mkdtemp())
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> opt = make_optimizer("declarative", SearchSpace(q))
>>> _ = opt.optimize(Stats())
>>> save_state(lake, "q", "declarative", '{"q": 1}', Stats(), opt)
>>> saved = load_state(lake, "q")
>>> saved.method, saved.optimizer.reoptimize({"rows": {"t": 5.0}}).cost > 0
('declarative', True)
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aspen import state_pickle
from aspen.optimizer.result import Optimizer
from aspen.optimizer.stats import Stats
from aspen.queries.keyed_table import read_rows, rewrite
from aspen.settings import Settings

__all__ = ["STATE_FORMAT", "STATE_TABLE", "SavedState", "drop_state", "load_state",
           "save_state"]

STATE_TABLE = "optimizer_state"
#: Bumped when the saved form changes incompatibly; other formats load as no state.
STATE_FORMAT = 1


@dataclass(frozen=True)
class SavedState:
    """A query's optimizer as saved, with the statistics it is at."""

    method: str
    query_json: str
    stats: Stats
    optimizer: Optimizer
    saved_at: datetime


def _schema():
    import pyarrow as pa

    return pa.schema([("query", pa.string()), ("method", pa.string()),
                      ("query_json", pa.string()), ("stats_json", pa.string()),
                      ("state", pa.binary()), ("format", pa.int64()),
                      ("saved_at", pa.timestamp("us", "UTC"))])


def save_state(settings: Settings, query: str, method: str, query_json: str, stats: Stats,
               optimizer: Optimizer, log_rows: Mapping[str, float] | None = None) -> None:
    """Save ``optimizer`` (at ``stats``) as the state of ``query`` (one commit); ``log_rows``:
    each table's Delta-log row count then, kept beside its ``rows`` for the due check."""
    document = stats.to_json()
    for table, rows in (log_rows or {}).items():
        document["tables"].setdefault(table, {})["log_rows"] = rows
    row = {"query": query, "method": method, "query_json": query_json,
           "stats_json": json.dumps(document, sort_keys=True),
           "state": pickle.dumps(optimizer, protocol=pickle.HIGHEST_PROTOCOL),
           "format": STATE_FORMAT, "saved_at": datetime.now(UTC)}
    rewrite(settings, STATE_TABLE, _schema(), "query", lambda rows: {**rows, query: row})


def load_state(settings: Settings, query: str) -> SavedState | None:
    """The saved optimizer of ``query``, or None (never saved, or not loadable)."""
    row = read_rows(settings, STATE_TABLE, "query").get(query)
    if row is None or row["format"] != STATE_FORMAT:
        return None
    try:
        optimizer = state_pickle.loads(row["state"], "the saved optimizer state",
                                       modules=("aspen.optimizer",))
        stats = Stats.from_json(json.loads(row["stats_json"]))
    except Exception:  # noqa: BLE001 - any unloadable state means: start from scratch
        return None
    if not callable(getattr(optimizer, "reoptimize", None)):
        return None
    stamp = row["saved_at"]
    return SavedState(row["method"], row["query_json"], stats, optimizer,
                      stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC))


def drop_state(settings: Settings, query: str) -> None:
    """Forget the saved optimizer of ``query`` (nothing when there is none)."""
    if query not in read_rows(settings, STATE_TABLE, "query"):
        return

    def remove(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        rows.pop(query, None)
        return rows

    rewrite(settings, STATE_TABLE, _schema(), "query", remove)
