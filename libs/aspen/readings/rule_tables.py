"""What the readings stream writes, and the rules it records.

A rule's micro-batch becomes rows of three tables (:func:`write_micro_batch`; the Spark sink of
:mod:`aspen.readings.rule_stream` and :mod:`aspen.readings.rule_local` both write through
it):

- ``reading_windows``: one row per closed window (or zone decision) — rule, sensor,
  ``[window_start, window_end)``, count, sum, min, max, avg, the decision it made (``insert``,
  ``delete`` or none), the covering interval of its readings' ids (``ids_lo``, ``ids_hi``) and,
  in Reduced-Eager mode, the ids themselves (``provenance``, :mod:`aspen.streams.encoding`;
  ``prov_base`` names the window holding the full set a delta is based on);
- ``reading_drops``: every reading the rule did not count, with its reason;
- the decisions as ``triggered`` updates, ingested into the update log as one file per
  micro-batch (``stream-<rule>-<batch>.jsonl``), so the region views maintain themselves.

A micro-batch rerun after a crash replaces its rows in both tables (their ``stream_batch``
column), and its update file is recognized as already ingested (same name, same bytes: the
rule is deterministic). ``reading_rules`` binds a rule's name to its definition and provenance
mode.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aspen.crashpoints import crash_point
from aspen.errors import ConfigError
from aspen.lake import deltars, tables
from aspen.settings import Settings
from aspen.streams.rules import TriggerRule
from aspen.streams.zones import ZoneRule

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "READING_DROPS", "READING_RULES", "READING_WINDOWS", "Rule", "decision_lines", "drops_arrow",
    "load_rule", "record_rule", "replace_stream_batch", "rule_from_json", "rule_json",
    "window_averages", "windows_arrow", "write_micro_batch",
]

READING_WINDOWS = "reading_windows"
READING_DROPS = "reading_drops"
#: Every rule a stream ran, by name, with its definition (explanations replay with it).
READING_RULES = "reading_rules"

#: A rule of either kind: per-sensor windows, or Ariadne's zone alarm.
Rule = TriggerRule | ZoneRule


def rule_json(rule: Rule) -> str:
    """A rule's definition as ``reading_rules`` records it (:func:`rule_from_json` reads it).

    >>> rule_json(TriggerRule(name="hot"))[:40]
    '{"aggregate": "avg", "kind": "window", "'
    """
    from dataclasses import asdict

    kind = "zone" if isinstance(rule, ZoneRule) else "window"
    return json.dumps({"kind": kind, **asdict(rule)}, sort_keys=True)


def rule_from_json(text: str) -> Rule:
    """A rule from its recorded definition.

    >>> rule_from_json(rule_json(ZoneRule(count=5))) == ZoneRule(count=5)
    True
    """
    data = json.loads(text)
    kind = data.pop("kind", "window")
    return ZoneRule(**data) if kind == "zone" else TriggerRule(**data)


def load_rule(settings: Settings, name: str) -> tuple[Rule, str] | None:
    """The rule named ``name`` a stream of this lake ran, and its provenance mode (None: no
    such rule ran)."""
    if not deltars.table_exists(settings, READING_RULES):
        return None
    rules = deltars.read_table(settings, READING_RULES, ["name", "definition", "mode"])
    found = rules[rules["name"] == name]
    if found.empty:
        return None
    return rule_from_json(found["definition"].iloc[0]), str(found["mode"].iloc[0])


def record_rule(settings: Settings, rule: Rule, mode: str) -> None:
    """Record ``rule`` and ``mode`` under the rule's name; a name that ran with another
    definition or mode is refused (its checkpointed state and windows belong to that one)."""
    import pyarrow as pa

    known = load_rule(settings, rule.name)
    if known == (rule, mode):
        return
    if known is not None:
        raise ConfigError(
            f"rule '{rule.name}' already ran as: {known[0].describe()}, {known[1]} provenance; "
            "give this one another --rule name")
    deltars.append_table(settings, READING_RULES, pa.table({
        "name": pa.array([rule.name], pa.string()),
        "definition": pa.array([rule_json(rule)], pa.string()),
        "mode": pa.array([mode], pa.string()),
        "recorded_at": pa.array([datetime.now(UTC)], pa.timestamp("us", tz="UTC")),
    }))


def windows_arrow(rule: Rule, mode: str, frame: pd.DataFrame, stream_batch: int,
                  readings_version: int) -> pa.Table:
    """The ``reading_windows`` rows of one micro-batch (``frame``: the rows the state function
    emits), as of version ``readings_version`` of ``readings``."""
    import pyarrow as pa

    _TIME = pa.timestamp("us", tz="UTC")  # noqa: N806
    windows = frame[frame["kind"] == "window"].sort_values(["sensor", "start_us"])
    provenance = list(windows["provenance"]) if mode == "eager" else [None] * len(windows)
    bases = windows["prov_base"] if mode == "eager" else [None] * len(windows)
    return pa.table({
        "rule": pa.array([rule.name] * len(windows), pa.string()),
        "sensor": pa.array(windows["sensor"], pa.string()),
        "window_start": pa.array(windows["start_us"].astype("int64"), _TIME),
        "window_end": pa.array(windows["end_us"].astype("int64"), _TIME),
        "count": pa.array(windows["count"].astype("int64"), pa.int64()),
        "sum": pa.array(windows["total"].astype(float), pa.float64()),
        "min": pa.array(windows["low"].astype(float), pa.float64()),
        "max": pa.array(windows["high"].astype(float), pa.float64()),
        "avg": pa.array(window_averages(windows), pa.float64()),
        "decision": pa.array(windows["decision"], pa.string()),
        "ids_lo": pa.array(windows["ids_lo"].astype("Int64"), pa.int64()),
        "ids_hi": pa.array(windows["ids_hi"].astype("Int64"), pa.int64()),
        "provenance": pa.array([None if p is None else bytes(p) for p in provenance],
                               pa.binary()),
        "prov_bytes": pa.array([0 if p is None else len(p) for p in provenance], pa.int64()),
        "prov_base": pa.array([None if b is None or b != b else int(b) for b in bases], _TIME),
        "mode": pa.array([mode] * len(windows), pa.string()),
        "stream_batch": pa.array([stream_batch] * len(windows), pa.int64()),
        "readings_version": pa.array([readings_version] * len(windows), pa.int64()),
    })


def window_averages(windows: pd.DataFrame) -> list[float]:
    """Each window's average as its rule computed it (the exact sum over the count, rounded
    once); ``total / count`` only for a row that does not carry one.

    >>> import pandas as pd
    >>> window_averages(pd.DataFrame({"total": [360.00000000000006, 3.0], "count": [4, 2],
    ...                         "avg": [90.0, None]}))
    [90.0, 1.5]
    """
    divided = (windows["total"] / windows["count"]).astype(float)
    if "avg" not in windows:
        return divided.tolist()
    return windows["avg"].astype(float).fillna(divided).tolist()


def _drops_arrow(rule: Rule, frame: pd.DataFrame, stream_batch: int) -> pa.Table:
    """The ``reading_drops`` rows of one micro-batch."""
    return drops_arrow("rule", rule.name, frame, stream_batch)


def drops_arrow(owner_column: str, owner: str, frame: pd.DataFrame,
                stream_batch: int) -> pa.Table:
    """The dropped readings of one micro-batch (``kind == "drop"`` rows of ``frame``) as rows
    of a drops table, each naming its rule or network (``owner_column`` = ``owner``)."""
    import pyarrow as pa

    drops = frame[frame["kind"] == "drop"].sort_values("id")
    return pa.table({
        owner_column: pa.array([owner] * len(drops), pa.string()),
        "id": pa.array(drops["id"].astype("int64"), pa.int64()),
        "sensor": pa.array(drops["sensor"], pa.string()),
        "ts": pa.array(drops["ts_us"].astype("int64"), pa.timestamp("us", tz="UTC")),
        "value": pa.array(drops["value"].astype(float), pa.float64()),
        "reason": pa.array(drops["reason"], pa.string()),
        "stream_batch": pa.array([stream_batch] * len(drops), pa.int64()),
    })


def _replace_batch(settings: Settings, name: str, rows: pa.Table, stream_batch: int) -> None:
    """Replace micro-batch ``stream_batch``'s rows of ``rows``' rule in ``name``."""
    names = set(rows.column("rule").to_pylist())
    replace_stream_batch(settings, name, rows, stream_batch, "rule",
                         names.pop() if names else "")


def replace_stream_batch(settings: Settings, name: str, rows: pa.Table, stream_batch: int,
                         owner_column: str, owner: str) -> None:
    """Replace micro-batch ``stream_batch``'s rows of ``owner`` (a rule or network: letters,
    digits and ``_``, safe in a predicate) in table ``name`` by ``rows``, in one commit: a
    rerun of the batch replaces what a crashed run wrote."""
    from deltalake import write_deltalake

    if not deltars.table_exists(settings, name):
        if rows.num_rows:
            deltars.append_table(settings, name, rows)
        return
    write_deltalake(settings.table_uri(name), rows, mode="overwrite",
                    predicate=f"stream_batch = {int(stream_batch)} AND "
                    f"{owner_column} = '{owner}'")


def decision_lines(rule: Rule, frame: pd.DataFrame) -> bytes:
    """The micro-batch's decisions as ``triggered`` update records (JSON Lines), in a fixed
    order so that a rerun writes the same bytes.

    >>> import pandas as pd
    >>> frame = pd.DataFrame([{"kind": "window", "sensor": "s1", "decision": "insert",
    ...                        "end_us": 60_000_000, "start_us": 0}])
    >>> print(decision_lines(TriggerRule(), frame).decode(), end="")
    {"op": "insert", "relation": "triggered", "id": "s1", "event_time": "1970-01-01T00:01:00Z"}
    """
    decided = frame[(frame["kind"] == "window") & frame["decision"].notna()]
    lines = []
    for row in decided.sort_values(["end_us", "sensor"]).to_dict("records"):
        moment = datetime.fromtimestamp(int(row["end_us"]) / 1e6, UTC)
        lines.append(json.dumps({
            "op": row["decision"], "relation": "triggered", "id": row["sensor"],
            "event_time": moment.strftime("%Y-%m-%dT%H:%M:%S") + (
                f".{moment.microsecond:06d}Z" if moment.microsecond else "Z"),
        }, ensure_ascii=False))
    return "".join(line + "\n" for line in lines).encode()


def write_micro_batch(settings: Settings, rule: Rule, mode: str, frame: pd.DataFrame,
                      stream_batch: int, log_decisions: bool = True) -> tuple[int, int, int]:
    """Write micro-batch ``stream_batch`` of ``rule`` from ``frame`` (the rows the state
    function emits): its ``reading_windows`` and ``reading_drops`` rows, each replacing what a
    crashed run of the batch wrote, then (``log_decisions``) its decisions as one update file
    ``stream-<rule>-<batch>.jsonl``, which a rerun finds already ingested. Returns (windows,
    drops, decisions) written. The Spark sink and :mod:`aspen.readings.rule_local` both write
    through this."""
    from aspen.lake.ingest import ingest_data

    if frame.empty:
        return 0, 0, 0
    version = (deltars.table_version(settings, tables.READINGS)
               if deltars.table_exists(settings, tables.READINGS) else -1)
    windows = windows_arrow(rule, mode, frame, stream_batch, version)
    drops = _drops_arrow(rule, frame, stream_batch)
    _replace_batch(settings, READING_WINDOWS, windows, stream_batch)
    crash_point("stream:after-windows")
    _replace_batch(settings, READING_DROPS, drops, stream_batch)
    crash_point("stream:after-drops")
    lines = decision_lines(rule, frame) if log_decisions else b""
    if lines:
        ingest_data(settings, [(f"stream-{rule.name}-{stream_batch:08d}.jsonl", lines)])
    return windows.num_rows, drops.num_rows, lines.count(b"\n")
