"""The registry of continuous queries: the Delta table ``queries`` under the lake root.

One row per query: ``name``, ``sql``, ``registered_at``, its join graph (``query_json``, Q.json)
and execution spec (``spec_json``) as parsed at registration, and its current plan:
``plan_json``, ``plan_cost``, ``optimizer``, ``planned_at`` and the statistics it was chosen
under (``stats_json``, S.json plus per-column min/max and the tables' Delta versions); the plan
columns are null until the query is first planned; ``provenance``: whether every run keeps each
result row's formula (:mod:`aspen.queries.query_provenance`; a column added later: a registry
written before it reads as false). Its result is the table ``q_<name>``.

The table is small and written by delta-rs with a compare-and-swap on its version
(:mod:`aspen.queries.keyed_table`): two registrations at once both land. No lease:
no maintainer reads or writes these tables (see docs/queries.md).

>>> import tempfile
>>> lake = Settings(lake=tempfile.mkdtemp())
>>> _ = register(lake, "n_links", "SELECT COUNT(*) AS n FROM link")
>>> [q.name for q in list_queries(lake)], get_query(lake, "n_links").plan is None
(['n_links'], True)
>>> drop(lake, "n_links"), list_queries(lake)
(False, [])
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aspen.errors import ConfigError
from aspen.queries.keyed_table import read_rows, rewrite
from aspen.queries.names import check_name, result_table
from aspen.queries.spec import ParsedQuery
from aspen.queries.sql import parse_query
from aspen.settings import Settings

__all__ = ["QUERIES_TABLE", "RegisteredQuery", "drop", "get_query", "list_queries", "register",
           "store_plan"]

QUERIES_TABLE = "queries"


@dataclass(frozen=True)
class RegisteredQuery:
    """One row of ``queries``."""

    name: str
    sql: str
    registered_at: datetime
    query_json: str
    spec_json: str
    plan_json: str | None = None
    plan_cost: float | None = None
    optimizer: str | None = None
    planned_at: datetime | None = None
    stats_json: str | None = None
    provenance: bool = False

    @property
    def plan(self) -> dict[str, Any] | None:
        """The stored plan tree, or None before the query is planned."""
        return None if self.plan_json is None else json.loads(self.plan_json)

    @property
    def stats(self) -> dict[str, Any] | None:
        """The statistics the stored plan was chosen under (JSON), or None."""
        return None if self.stats_json is None else json.loads(self.stats_json)

    def parsed(self) -> ParsedQuery:
        """The query parsed again from its SQL (against the tables known now)."""
        return parse_query(self.name, self.sql)


def _schema():
    import pyarrow as pa

    stamp = pa.timestamp("us", "UTC")
    return pa.schema([
        ("name", pa.string()), ("sql", pa.string()), ("registered_at", stamp),
        ("query_json", pa.string()), ("spec_json", pa.string()), ("plan_json", pa.string()),
        ("plan_cost", pa.float64()), ("optimizer", pa.string()), ("planned_at", stamp),
        ("stats_json", pa.string()), ("provenance", pa.bool_())])


def _utc(value: datetime | None) -> datetime | None:
    return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)


def _row(row: dict[str, Any]) -> RegisteredQuery:
    row = dict(row)
    row["registered_at"], row["planned_at"] = _utc(row["registered_at"]), _utc(row["planned_at"])
    row["provenance"] = bool(row.get("provenance"))  # absent or null in older registries
    return RegisteredQuery(**row)


def _read(settings: Settings) -> dict[str, RegisteredQuery]:
    """The registered queries by name (none before the first registration)."""
    return {name: _row(row) for name, row in read_rows(settings, QUERIES_TABLE, "name").items()}


def _update(settings: Settings,
            change: Callable[[dict[str, RegisteredQuery]], dict[str, RegisteredQuery]]) -> None:
    """Apply ``change`` to the registry's rows and write them, by compare-and-swap."""
    def on_rows(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        new = change({name: _row(row) for name, row in rows.items()})
        return {name: asdict(query) for name, query in new.items()}

    rewrite(settings, QUERIES_TABLE, _schema(), "name", on_rows)


def _unknown(name: str, rows: dict[str, RegisteredQuery]) -> ConfigError:
    known = ", ".join(sorted(rows)) or "none"
    return ConfigError(f"no query {name!r} is registered (registered: {known})")


def register(settings: Settings, name: str, sql: str, replace_existing: bool = False,
             provenance: bool = False) -> RegisteredQuery:
    """Register the query ``name`` (validated by parsing its SQL); an existing one of that name
    is refused unless ``replace_existing`` (which also forgets its plan). With ``provenance``
    its SQL must also be one the provenance instrumentation takes, and every run keeps each
    result row's formula."""
    parsed = parse_query(check_name(name), sql)
    if provenance:
        from aspen.queries.query_provenance import check_instrumentable

        check_instrumentable(name, sql)
    entry = RegisteredQuery(name, sql, datetime.now(UTC), json.dumps(parsed.query.to_json()),
                            json.dumps(parsed.spec.to_json()), provenance=provenance)

    def add(rows: dict[str, RegisteredQuery]) -> dict[str, RegisteredQuery]:
        if name in rows and not replace_existing:
            raise ConfigError(f"query {name!r} is already registered (drop it first, or "
                              "register it with --replace)")
        rows[name] = entry
        return rows

    _update(settings, add)
    return entry


def list_queries(settings: Settings) -> list[RegisteredQuery]:
    """Every registered query, by name."""
    return [q for _, q in sorted(_read(settings).items())]


def get_query(settings: Settings, name: str) -> RegisteredQuery:
    """The registered query ``name`` (:class:`~aspen.errors.ConfigError` if there is none)."""
    rows = _read(settings)
    if name not in rows:
        raise _unknown(name, rows)
    return rows[name]


def store_plan(settings: Settings, name: str, plan: dict[str, Any], cost: float,
               stats_json: dict[str, Any], optimizer: str) -> RegisteredQuery:
    """Record the plan chosen for ``name`` (and the statistics it was chosen under)."""
    stored: list[RegisteredQuery] = []

    def set_plan(rows: dict[str, RegisteredQuery]) -> dict[str, RegisteredQuery]:
        if name not in rows:
            raise _unknown(name, rows)
        rows[name] = replace(rows[name], plan_json=json.dumps(plan), plan_cost=float(cost),
                             optimizer=optimizer, planned_at=datetime.now(UTC),
                             stats_json=json.dumps(stats_json))
        stored[:] = [rows[name]]
        return rows

    _update(settings, set_plan)
    return stored[0]


def drop(settings: Settings, name: str) -> bool:
    """Unregister ``name``, forget its saved optimizer, and delete its result table ``q_<name>``
    and its incremental state ``qstate_<name>`` when the lake is local (elsewhere the tables
    stay: delete them with the store's tools); whether a result table was deleted. Its rows in
    ``query_runs``, ``query_batches`` and ``plans`` stay, as history; its last status
    (``query_status``) goes."""
    def remove(rows: dict[str, RegisteredQuery]) -> dict[str, RegisteredQuery]:
        if name not in rows:
            raise _unknown(name, rows)
        del rows[name]
        return rows

    _update(settings, remove)
    from aspen.queries.optimizer_state import drop_state
    from aspen.queries.status import forget_status

    drop_state(settings, name)
    forget_status(settings, name)
    from aspen.queries.incremental.maintain import forget_held
    from aspen.queries.incremental.store import state_table

    forget_held()
    state = settings.local_table_path(state_table(name))
    if state is not None and (Path(state) / "_delta_log").is_dir():
        shutil.rmtree(state)
    path = settings.local_table_path(result_table(name))
    if path is not None and (Path(path) / "_delta_log").is_dir():
        shutil.rmtree(path)
        return True
    return False
