"""Builders for update records (docs/architecture.md, "Update records"): plain dicts, canonical
key order.

Every builder returns a new ``dict`` whose keys follow :data:`COLUMNS`; optional keys
(``ttl_s``, ``event_time``) are present only when given. Event times are ISO 8601 UTC strings
with milliseconds and a ``Z`` suffix.

>>> link_insert("n1", "n2", 2.0, ttl_s=600)
{'op': 'insert', 'relation': 'link', 'src': 'n1', 'dst': 'n2', 'cost': 2.0, 'ttl_s': 600}
>>> iso_time(1735689600.25)
'2025-01-01T00:00:00.250Z'
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aspen.errors import ConfigError

__all__ = [
    "COLUMNS",
    "RELATION_KEYS",
    "Record",
    "iso_time",
    "parse_time",
    "link_insert",
    "link_delete",
    "sensor_insert",
    "sensor_delete",
    "triggered_insert",
    "triggered_delete",
    "region_seed_insert",
    "tuple_key",
]

#: An update record: a plain dict in the format of docs/architecture.md, "Update records".
Record = dict[str, Any]

#: Every column an update record can have, in the order JSON keys and CSV columns are written.
COLUMNS: tuple[str, ...] = (
    "op",
    "relation",
    "src",
    "dst",
    "cost",
    "id",
    "x",
    "y",
    "region",
    "ttl_s",
    "event_time",
)

#: The fields that identify a base tuple of each relation (what a delete names).
RELATION_KEYS: dict[str, tuple[str, ...]] = {
    "link": ("src", "dst"),
    "sensor": ("id",),
    "triggered": ("id",),
    "region_seed": ("region", "id"),
}


def iso_time(epoch_s: float) -> str:
    """Seconds since the Unix epoch as ISO 8601 UTC with milliseconds.

    >>> iso_time(0)
    '1970-01-01T00:00:00.000Z'
    """
    moment = datetime.fromtimestamp(round(epoch_s, 3), tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_time(text: str) -> float:
    """Parse an ISO 8601 time (``Z`` or an offset; naive means UTC) to epoch seconds.

    >>> parse_time("2025-01-01T00:00:00Z")
    1735689600.0
    """
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"not an ISO 8601 time: {text!r}") from err
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _optional(record: Record, ttl_s: float | None, event_time: str | None) -> Record:
    if ttl_s is not None:
        record["ttl_s"] = ttl_s
    if event_time is not None:
        record["event_time"] = event_time
    return record


def link_insert(
    src: str, dst: str, cost: float, *, ttl_s: float | None = None, event_time: str | None = None
) -> Record:
    """Insert the directed link ``src → dst`` with latency ``cost``.

    >>> link_insert("a", "b", 10.0)["cost"]
    10.0
    """
    record: Record = {"op": "insert", "relation": "link", "src": src, "dst": dst, "cost": cost}
    return _optional(record, ttl_s, event_time)


def link_delete(src: str, dst: str, *, event_time: str | None = None) -> Record:
    """Delete the directed link ``src → dst``.

    >>> link_delete("a", "b")
    {'op': 'delete', 'relation': 'link', 'src': 'a', 'dst': 'b'}
    """
    return _optional({"op": "delete", "relation": "link", "src": src, "dst": dst}, None, event_time)


def sensor_insert(
    sensor_id: str, x: float, y: float, *, ttl_s: float | None = None, event_time: str | None = None
) -> Record:
    """Insert a sensor at ``(x, y)`` metres.

    >>> sensor_insert("s7", 10.0, 35.5)
    {'op': 'insert', 'relation': 'sensor', 'id': 's7', 'x': 10.0, 'y': 35.5}
    """
    record: Record = {"op": "insert", "relation": "sensor", "id": sensor_id, "x": x, "y": y}
    return _optional(record, ttl_s, event_time)


def sensor_delete(sensor_id: str, *, event_time: str | None = None) -> Record:
    """Delete a sensor.

    >>> sensor_delete("s7")["op"]
    'delete'
    """
    return _optional({"op": "delete", "relation": "sensor", "id": sensor_id}, None, event_time)


def triggered_insert(
    sensor_id: str, *, ttl_s: float | None = None, event_time: str | None = None
) -> Record:
    """Mark a sensor as triggered.

    >>> triggered_insert("s7")
    {'op': 'insert', 'relation': 'triggered', 'id': 's7'}
    """
    return _optional({"op": "insert", "relation": "triggered", "id": sensor_id}, ttl_s, event_time)


def triggered_delete(sensor_id: str, *, event_time: str | None = None) -> Record:
    """Un-trigger a sensor.

    >>> triggered_delete("s7")
    {'op': 'delete', 'relation': 'triggered', 'id': 's7'}
    """
    return _optional({"op": "delete", "relation": "triggered", "id": sensor_id}, None, event_time)


def region_seed_insert(region: str, sensor_id: str, *, event_time: str | None = None) -> Record:
    """Make ``sensor_id`` the seed of ``region``.

    >>> region_seed_insert("r1", "s7")
    {'op': 'insert', 'relation': 'region_seed', 'region': 'r1', 'id': 's7'}
    """
    record: Record = {"op": "insert", "relation": "region_seed", "region": region, "id": sensor_id}
    return _optional(record, None, event_time)


def tuple_key(record: Record) -> tuple[str, tuple[Any, ...]]:
    """The base tuple a (valid) record names: ``(relation, key values)``.

    >>> tuple_key(link_delete("a", "b"))
    ('link', ('a', 'b'))
    """
    relation = record["relation"]
    return relation, tuple(record[name] for name in RELATION_KEYS[relation])
