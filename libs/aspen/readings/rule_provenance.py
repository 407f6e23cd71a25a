"""Why a sensor is triggered: its rule's windows and the readings behind them.

A window row of ``reading_windows`` names its readings in one of two ways
(:mod:`aspen.readings.rule_stream`): Reduced-Eager rows carry the ids, encoded; Replay-Lazy
rows carry only their covering interval ``[ids_lo, ids_hi]``, and the ids are rebuilt by
replaying the sensor's retained readings of that interval through the rule's windows, with the
readings the stream dropped left out (Ariadne's c-join and replay; the selection on the sensor
is pushed below the read, so only the sensor's readings of the interval are read). Either way
the ids are then looked up in ``readings`` (a p-join by id, its files pruned by the id range).

Readings are kept for a retention period (housekeeping deletes older ones); a request for a
window whose readings are gone says so (:class:`~aspen.errors.ProvenanceExpiredError`) instead
of answering with fewer readings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aspen.errors import ConfigError, ProvenanceExpiredError
from aspen.lake import deltars, tables
from aspen.readings.lake_sql import (
    micros,
    read_where,
    retained_from,
    sql_text,
    timestamp_literal,
)
from aspen.readings.rule_tables import READING_DROPS, READING_WINDOWS, load_rule
from aspen.settings import Settings
from aspen.streams.rules import TriggerRule
from aspen.streams.windows import Reading, replay_window
from aspen.streams.zones import ZoneRule

__all__ = [
    "SensorExplanation", "TriggerOrigin", "WindowReadings", "explain_triggered",
    "trigger_origins", "window_ids",
]


@dataclass
class WindowReadings:
    """One window of a rule over a sensor, its aggregates and its readings (id, ts, value)."""

    rule: str
    sensor: str
    start: datetime
    end: datetime
    count: int
    avg: float
    decision: str | None
    mode: str
    readings: list[tuple[int, datetime, float]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "sensor": self.sensor, "start": self.start.isoformat(),
            "end": self.end.isoformat(), "count": self.count, "avg": self.avg,
            "decision": self.decision, "mode": self.mode,
            "readings": [{"id": i, "ts": ts.isoformat(), "value": v}
                         for i, ts, v in self.readings],
        }


@dataclass
class SensorExplanation:
    """A sensor's triggered state under a rule as of a time, and the windows behind it."""

    sensor: str
    rule: str
    at: datetime | None
    triggered: bool
    windows: list[WindowReadings]

    def as_dict(self) -> dict[str, Any]:
        return {"sensor": self.sensor, "rule": self.rule,
                "at": None if self.at is None else self.at.isoformat(),
                "triggered": self.triggered, "windows": [w.as_dict() for w in self.windows]}


def window_ids(settings: Settings, row: dict[str, Any],
               rule: TriggerRule | ZoneRule) -> list[int]:
    """The ids of the readings of window ``row`` (a ``reading_windows`` row): decoded in
    Reduced-Eager mode, replayed in Replay-Lazy mode."""
    sensor = sql_text(row["sensor"])
    if row["mode"] == "none":
        raise ConfigError(f"rule '{rule.name}' keeps no provenance (it ran with --provenance "
                          "none)")
    if row["mode"] == "eager":
        return list(_decoded(settings, row, rule, sensor))
    if isinstance(rule, ZoneRule):
        return list(_zone_replayed(settings, row, rule))
    lo, hi = int(row["ids_lo"]), int(row["ids_hi"])
    readings = read_where(settings, tables.READINGS,
                          f"sensor = {sensor} AND id BETWEEN {lo} AND {hi}", ["id", "ts", "value"])
    dropped: set[int] = set()
    if deltars.table_exists(settings, READING_DROPS):
        drops = read_where(settings, READING_DROPS, f"rule = {sql_text(rule.name)} AND "
                           f"sensor = {sensor} AND id BETWEEN {lo} AND {hi}", ["id"])
        dropped = {int(i) for i in drops["id"]}
    ordered = readings.sort_values("id")
    stream = [Reading(int(i), micros(ts), float(v)) for i, ts, v in
              zip(ordered["id"], ordered["ts"], ordered["value"], strict=True)
              if int(i) not in dropped]
    ids = replay_window(rule.spec, stream, micros(row["window_start"]))
    if ids is None:
        raise ProvenanceExpiredError(
            f"the readings of {row['sensor']}'s window at {row['window_start']} could not be "
            "replayed")
    return list(ids)


def _zone_replayed(settings: Settings, row: dict[str, Any], rule: ZoneRule) -> tuple[int, ...]:
    """A Replay-Lazy zone decision's ids, rebuilt by replaying its zone's kept readings: first
    those of its covering interval from an empty zone (Ariadne's replay: the hot sensors' count
    windows lie inside it), and when that cannot confirm the decision (a sensor triggered
    before the interval began, whose un-trigger the interval cannot see) every retained
    reading of the zone up to the interval's end. The zone is its sensor's position now; a
    decision the replay does not give back with the same interval (its sensor moved, or its
    readings were purged) is refused."""
    from aspen.streams.zones import ZoneReading, ZoneState, zone_of

    if not deltars.table_exists(settings, "sensor"):
        raise ProvenanceExpiredError("no sensor positions to replay a zone decision with")
    positions = deltars.read_table(settings, "sensor", ["id", "x", "y"]).drop_duplicates("id")
    zones = {str(i): zone_of(rule, float(x), float(y)) for i, x, y in
             zip(positions["id"], positions["x"], positions["y"], strict=True)}
    zone = zones.get(str(row["sensor"]))
    members = sorted(s for s, z in zones.items() if z == zone)
    lo, hi = int(row["ids_lo"]), int(row["ids_hi"])
    readings = read_where(settings, tables.READINGS,
                          f"sensor IN ({', '.join(map(sql_text, members))}) AND id <= {hi}",
                          ["id", "sensor", "ts", "value"]) if members else None
    if readings is None or readings.empty:
        raise ProvenanceExpiredError(f"the readings of {row['sensor']}'s zone are gone")
    if deltars.table_exists(settings, READING_DROPS):
        drops = read_where(settings, READING_DROPS, f"rule = {sql_text(rule.name)} AND id <= {hi}",
                           ["id"])
        readings = readings[~readings["id"].isin(set(drops["id"]))]
    ordered = readings.sort_values("id")
    stream = [ZoneReading(int(i), str(s), micros(ts), float(v)) for i, s, ts, v in
              zip(ordered["id"], ordered["sensor"], ordered["ts"], ordered["value"], strict=True)]
    at = micros(row["window_end"])
    for first in (lo, stream[0].id if stream else lo):
        step = ZoneState().add_all(rule, [r for r in stream if r.id >= first])
        for decision in step.decisions:
            if (decision.sensor, decision.op, decision.ts_us) == (row["sensor"],
                                                                  row["decision"], at) \
                    and (decision.ids[0], decision.ids[-1]) == (lo, hi):
                return decision.ids
    raise ProvenanceExpiredError(
        f"{row['sensor']}'s zone decision at {row['window_end']} cannot be rebuilt from the "
        "retained readings (its sensor moved, or readings before it were purged)")


def _decoded(settings: Settings, row: dict[str, Any], rule: TriggerRule | ZoneRule,
             sensor: str) -> tuple[int, ...]:
    """A Reduced-Eager window's ids: its encoding, and when that is a delta the full set of
    the window it is based on (``prov_base``; deltas are never chained)."""
    from aspen.streams.encoding import decode, read_header

    data = bytes(row["provenance"])
    if not read_header(data).delta:
        return decode(data)
    base_start = timestamp_literal(row["prov_base"])
    base = read_where(settings, READING_WINDOWS, f"rule = {sql_text(rule.name)} AND "
                      f"sensor = {sensor} AND window_start = {base_start}", ["provenance"])
    if base.empty:
        raise ProvenanceExpiredError(
            f"the full id set {row['sensor']}'s window at {row['window_start']} is encoded "
            "against is missing from reading_windows")
    return decode(data, last_full=decode(bytes(base["provenance"].iloc[0])))


def _window_readings(settings: Settings, rule: TriggerRule | ZoneRule, sensor: str,
                     row: dict[str, Any], retained: int | None) -> WindowReadings:
    """Window ``row`` of ``reading_windows`` with its readings (id, ts, value), or
    :class:`~aspen.errors.ProvenanceExpiredError` when they are past the retention (the
    lowest retained reading id is ``retained``, read once by the caller)."""
    if retained is None or int(row["ids_lo"]) < retained:
        raise ProvenanceExpiredError(
            f"the readings behind {sensor}'s window at {row['window_start']} are past the "
            "readings' retention (deleted by housekeeping)")
    ids = window_ids(settings, row, rule)
    found = read_where(settings, tables.READINGS,
                       f"id IN ({', '.join(str(i) for i in ids)})", ["id", "ts", "value"]) \
        .sort_values("id")
    return WindowReadings(
        rule.name, sensor, row["window_start"].to_pydatetime(),
        row["window_end"].to_pydatetime(), int(row["count"]), float(row["avg"]),
        row["decision"], row["mode"],
        [(int(i), ts.to_pydatetime(), float(v)) for i, ts, v in
         zip(found["id"], found["ts"], found["value"], strict=True)])


def explain_triggered(settings: Settings, sensor: str,
                      rule: TriggerRule | ZoneRule | None = None,
                      at: datetime | None = None) -> SensorExplanation:
    """Sensor ``sensor``'s triggered state under ``rule`` as of ``at`` (its latest otherwise):
    the window that set it and, while triggered, every later window that kept it so, each with
    its readings."""
    rule = rule or TriggerRule()
    if not deltars.table_exists(settings, READING_WINDOWS):
        raise ConfigError(f"no rule windows under {settings.lake_uri} yet: run `aspen stream`")
    predicate = f"rule = {sql_text(rule.name)} AND sensor = {sql_text(sensor)}"
    if at is not None:
        predicate += f" AND window_end <= {timestamp_literal(at)}"
    windows = read_where(settings, READING_WINDOWS, predicate).sort_values("window_start")
    decided = windows[windows["decision"].notna()]
    if decided.empty:
        return SensorExplanation(sensor, rule.name, at, False, [])
    last = decided.iloc[-1]
    triggered = last["decision"] == "insert"
    behind = (windows[windows["window_start"] >= last["window_start"]] if triggered
              else decided.iloc[-1:])
    retained = retained_from(settings)
    out = [_window_readings(settings, rule, sensor, row, retained)
           for row in behind.to_dict("records")]
    return SensorExplanation(sensor, rule.name, at, triggered, out)


@dataclass
class TriggerOrigin:
    """Where a live ``triggered`` instance of a sensor came from: the update file that logged
    it and, when a rule's stream logged it, the rule and the window (with its readings) that
    decided it."""

    sensor: str
    var: str
    source: str
    rule: str | None
    window: WindowReadings | None

    def as_dict(self) -> dict[str, Any]:
        return {"sensor": self.sensor, "var": self.var, "source": self.source,
                "rule": self.rule,
                "window": None if self.window is None else self.window.as_dict()}


#: The name of the update file a rule's stream logs its decisions of one micro-batch in.
_STREAM_SOURCE = re.compile(r"^stream-(?P<rule>[A-Za-z0-9_]+)-\d+\.jsonl$")


def trigger_origins(settings: Settings, sensor: str) -> list[TriggerOrigin]:
    """The live ``triggered`` instances of ``sensor``, each with its origin (the chain
    triggered sensor ← window ← readings; a sensor triggered by a plain update has no window)."""
    from aspen.lake.apply_local import key_json

    live = read_where(settings, tables.VARIABLES,
                      f"relation = 'triggered' AND key = {sql_text(key_json([sensor]))} "
                      "AND deleted_batch IS NULL", ["var", "inserted_seq"])
    out = []
    for var, seq in sorted(zip(live["var"], live["inserted_seq"], strict=True)):
        update = read_where(settings, tables.UPDATES, f"seq = {int(seq)}", ["source", "event_time"])
        source = str(update["source"].iloc[0]) if len(update) else "?"
        match = _STREAM_SOURCE.match(source)
        known = load_rule(settings, match["rule"]) if match else None
        window = None
        if known is not None:
            rule = known[0]
            end = timestamp_literal(update["event_time"].iloc[0])
            rows = read_where(settings, READING_WINDOWS,
                              f"rule = {sql_text(rule.name)} AND sensor = {sql_text(sensor)} AND "
                              f"window_end = {end} AND decision = 'insert'")
            if len(rows):
                window = _window_readings(settings, rule, sensor, rows.to_dict("records")[0],
                                          retained_from(settings))
        out.append(TriggerOrigin(sensor, str(var), source, match["rule"] if match else None,
                                 window))
    return out
