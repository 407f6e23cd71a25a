"""A test-side checker of the update-record rules (docs/architecture.md, "Update records"),
independent of the generators."""

from __future__ import annotations

import json
import math
from typing import Any

FIELDS = {
    "link": {"insert": {"src", "dst", "cost"}, "delete": {"src", "dst"}},
    "sensor": {"insert": {"id", "x", "y"}, "delete": {"id"}},
    "triggered": {"insert": {"id"}, "delete": {"id"}},
    "region_seed": {"insert": {"region", "id"}, "delete": {"region", "id"}},
}
OPTIONAL = {"ttl_s", "event_time"}
ID_FIELDS = {"src", "dst", "id", "region"}
NUMBER_FIELDS = {"cost", "x", "y", "ttl_s"}


def problem(line_or_record: str | dict[str, Any]) -> str | None:
    """Why a line/record is invalid, or None when it is valid."""
    if isinstance(line_or_record, str):
        try:
            record = json.loads(line_or_record)
        except json.JSONDecodeError:
            return "malformed"
    else:
        record = line_or_record
    if not isinstance(record, dict):
        return "not an object"
    if record.get("op") not in ("insert", "delete"):
        return "op"
    if record.get("relation") not in FIELDS:
        return "relation"
    required = FIELDS[record["relation"]][record["op"]]
    if required - set(record):
        return "missing"
    if set(record) - required - OPTIONAL - {"op", "relation"}:
        return "extra"
    for name in required & ID_FIELDS:
        if not isinstance(record[name], str):
            return "type"
        if not record[name]:
            return "empty"
    for name in (required | OPTIONAL) & NUMBER_FIELDS & set(record):
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "type"
        if not math.isfinite(value):
            return "nonfinite"
        if name in ("cost", "ttl_s") and value < 0:
            return "negative"
    if "event_time" in record and not isinstance(record["event_time"], str):
        return "type"
    return None
