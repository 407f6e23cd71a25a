"""The last outcome of every continuous query: the Delta table ``query_status``.

One row per query that ran at least once after a maintained batch: ``query``, ``status``
(``ok``, ``failed`` or ``timed out``), ``reason`` (one line, no JVM stack; null when ok),
``batch_id`` (the batch the round ran after), ``run_id`` (its ``query_runs`` rows when it
ran), ``finished_at`` and ``seconds``. A round of queries rewrites the table once, by
compare-and-swap (:mod:`aspen.queries.keyed_table`), so a query refused at run time — its SQL
no longer passes the checks of :mod:`aspen.queries.limits`, a table is missing, Spark failed or
the time limit cancelled it — is visible in ``aspen query list`` and ``show`` and on the
console's Queries page.

>>> import tempfile
>>> lake = Settings(lake=tempfile.mkdtemp())
>>> now = datetime(2026, 1, 1, tzinfo=UTC)
>>> record_statuses(lake, [QueryStatus("hot", "failed", "division by zero", 7, None, now, 0.5)])
>>> read_statuses(lake)["hot"].describe()
'failed after batch 7: division by zero'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any

from aspen.errors import AspenError
from aspen.settings import Settings

__all__ = ["FAILED", "OK", "STATUS_TABLE", "TIMED_OUT", "QueryStatus", "forget_status",
           "one_line", "read_statuses", "record_statuses"]

STATUS_TABLE = "query_status"
#: The statuses a query's last run can have.
OK, FAILED, TIMED_OUT = "ok", "failed", "timed out"
#: The longest reason kept (characters).
MAX_REASON = 300


@dataclass(frozen=True)
class QueryStatus:
    """One row of ``query_status`` (see the module's docstring)."""

    query: str
    status: str
    reason: str | None
    batch_id: int | None
    run_id: str | None
    finished_at: datetime
    seconds: float

    def describe(self) -> str:
        """The status in a few words, with its reason."""
        after = "" if self.batch_id is None else f" after batch {self.batch_id}"
        why = f": {self.reason}" if self.reason else ""
        return f"{self.status}{after}{why}"


def one_line(err: BaseException, limit: int = MAX_REASON) -> str:
    """An error as one line a person can read: Aspen's own message, or a Spark/Py4J error's
    first meaningful line with its class, never the JVM's stack.

    >>> one_line(ValueError("bad value\\n\\nJVM stacktrace:\\n\\tat x.y(Z.java:1)"))
    'ValueError: bad value'
    >>> one_line(RuntimeError("An error occurred while calling o1.save.\\n: java.lang.X: boom\\n"
    ...                       "\\tat a.b"))
    'RuntimeError: java.lang.X: boom'
    """
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if lines and lines[0].startswith("An error occurred while calling") and len(lines) > 1:
        lines = lines[1:]  # Py4J's own first line names only the JVM method
    text = lines[0].lstrip(": ").strip() if lines else "(no message)"
    if not isinstance(err, AspenError):
        text = f"{type(err).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _schema():
    import pyarrow as pa

    types = {"batch_id": pa.int64(), "finished_at": pa.timestamp("us", "UTC"),
             "seconds": pa.float64()}
    return pa.schema([(f.name, types.get(f.name, pa.string())) for f in fields(QueryStatus)])


def _status(row: dict[str, Any]) -> QueryStatus:
    values = {f.name: row.get(f.name) for f in fields(QueryStatus)}
    finished = values["finished_at"]
    if isinstance(finished, datetime) and finished.tzinfo is None:
        values["finished_at"] = finished.replace(tzinfo=UTC)
    return QueryStatus(**values)


def record_statuses(settings: Settings, statuses: Sequence[QueryStatus]) -> None:
    """Replace the rows of these queries in ``query_status`` (one commit for them all)."""
    from aspen.queries.keyed_table import rewrite

    if not statuses:
        return

    def change(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        rows.update({s.query: asdict(s) for s in statuses})
        return rows

    rewrite(settings, STATUS_TABLE, _schema(), "query", change)


def forget_status(settings: Settings, name: str) -> None:
    """Remove the row of ``name`` (a dropped query), if any; no table, nothing written.

    >>> import tempfile
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> record_statuses(lake, [QueryStatus("hot", "ok", None, 1, None, now, 0.1)])
    >>> forget_status(lake, "hot"), read_statuses(lake)
    (None, {})
    """
    from aspen.queries.keyed_table import rewrite

    if name not in read_statuses(settings):
        return

    def change(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        rows.pop(name, None)
        return rows

    rewrite(settings, STATUS_TABLE, _schema(), "query", change)


def read_statuses(settings: Settings) -> dict[str, QueryStatus]:
    """Every query's last outcome, by name (none before the first round)."""
    from aspen.queries.keyed_table import read_rows

    return {name: _status(row) for name, row in read_rows(settings, STATUS_TABLE,
                                                           "query").items()}
