"""Why a network output exists: the readings behind it, per input stream.

Reduced-Eager outputs carry their ids (decoded here); Replay-Lazy outputs carry only their
covering interval per stream, and the ids are rebuilt by replaying the group's retained
readings of that interval — with the readings the network dropped left out, and the readings
around it within the network's horizon given as the stored context a replay needs to tell a
complete window from a partial one — through the reference algebra
(:func:`aspen.streams.algebra.replay`). Where that replay cannot confirm an output (a count
window whose grid its interval does not anchor, e.g. under a join with earlier readings), the
group's retained readings up to the interval's end run through the network instead. Either
way the ids are then looked up in ``readings``.
A request for an output whose readings are past the retention says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aspen.errors import ConfigError, ProvenanceExpiredError
from aspen.lake import deltars, tables
from aspen.readings.lake_sql import read_where, retained_from, sql_text, timestamp_literal
from aspen.readings.network_tables import (
    NETWORK_DROPS,
    NETWORK_OUTPUTS,
    load_recorded_network,
    output_id,
    readings_of,
)
from aspen.settings import Settings
from aspen.streams.algebra import replay
from aspen.streams.encoding import decode_per_stream
from aspen.streams.networks import StreamNetwork

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["OutputExplanation", "attribute_words", "explain_output", "latest_outputs",
           "output_ids"]


@dataclass
class OutputExplanation:
    """An output of a network: its attributes and its readings (id, sensor, ts, value) per
    input stream."""

    network: str
    output: str
    mode: str
    data: dict[str, Any]
    readings: dict[str, list[tuple[int, str, float, float]]]

    def as_dict(self) -> dict[str, Any]:
        return {"network": self.network, "output": self.output, "mode": self.mode,
                "data": self.data,
                "readings": {stream: [{"id": i, "sensor": s, "ts": t, "value": v}
                                      for i, s, t, v in rows]
                             for stream, rows in self.readings.items()}}

    def lines(self) -> list[str]:
        out = [f"{self.network} output {self.output} ({self.mode} provenance): "
               + attribute_words(self.data)]
        for stream, rows in self.readings.items():
            out.append(f"  stream {stream}: {len(rows)} reading(s)")
            out.extend(f"    reading {i}  {s}  {_moment(t)}  {v:g}" for i, s, t, v in rows)
        return out


#: Attributes that hold event times (seconds since the epoch) in a network's outputs.
TIME_ATTRIBUTES = ("ts", "start", "end", "r_ts")


def _moment(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def attribute_words(data: dict[str, Any]) -> str:
    """An output's attributes as ``name = value``, event times as UTC times.

    >>> attribute_words({"sensor": "s1", "start": 60.0, "avg_value": 91.5})
    'sensor = s1, start = 1970-01-01 00:01:00.000000, avg_value = 91.5'
    """
    def word(name: str, value: Any) -> str:
        timed = name in TIME_ATTRIBUTES and isinstance(value, int | float)
        return f"{name} = {_moment(value) if timed else value}"

    return ", ".join(word(name, value) for name, value in data.items())


def _network(settings: Settings, name: str) -> tuple[StreamNetwork, str]:
    found = load_recorded_network(settings, name)
    if found is None:
        raise ConfigError(f"no stream network named '{name}' ran on this lake")
    return found


def output_ids(settings: Settings, network: StreamNetwork, row: dict[str, Any]
               ) -> dict[str, tuple[int, ...]]:
    """The reading ids behind ``row`` (a ``network_outputs`` row) per input stream: decoded
    (Reduced-Eager) or replayed (Replay-Lazy)."""
    if row["mode"] == "none":
        raise ConfigError(f"network '{network.name}' keeps no provenance (it ran with "
                          "--provenance none)")
    if row["mode"] == "eager":
        return _decoded(settings, network, row)
    cover = {stream: (int(lo), int(hi)) for stream, (lo, hi) in json.loads(row["cover"]).items()}
    stored = _stored_context(settings, network, row)
    target = output_id(row["output"])
    found = replay(network.query, stored, [cover], [target])
    if target in found:
        return {stream: tuple(sorted(ids)) for stream, ids in found[target].items()}
    return _replayed_from_start(settings, network, row, cover)


def _replayed_from_start(settings: Settings, network: StreamNetwork, row: dict[str, Any],
                         cover: dict[str, tuple[int, int]]) -> dict[str, tuple[int, ...]]:
    """The output rebuilt by running the group's kept readings, from its first retained one
    to the end of the covering interval, through the network from a fresh state: for an
    output a replay of its interval cannot confirm (a count window whose grid the interval
    does not anchor). Exact: an output's readings all lie at or below the interval's end, and
    a count window is its first row and the rows after it. Refused when the rebuilt output's
    cover differs from the stored one (readings before it were purged)."""
    from aspen.streams.incremental import NetworkState

    group = f"sensor = {sql_text(row['grp'])} AND " if network.partition else ""
    readings = read_where(settings, tables.READINGS, f"{group}id <= {int(row['ids_hi'])}",
                          ["id", "sensor", "ts", "value"])
    readings = _without_drops(settings, network, readings).sort_values("id")
    state = NetworkState(network)
    rows = state.step(readings_of(readings)).outputs + state.finish()
    target = output_id(row["output"])
    rebuilt = next((out for out in rows if out.id == target), None)
    if rebuilt is None or dict(rebuilt.cov) != cover:
        raise ProvenanceExpiredError(
            f"{row['output']} cannot be rebuilt from the retained readings (a count window "
            "whose earlier readings were purged)")
    return {stream: tuple(sorted(ids)) for stream, ids in rebuilt.prov.items()}


def _decoded(settings: Settings, network: StreamNetwork,
             row: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """A Reduced-Eager output's ids: a stream written as a delta is decoded against the full
    set its base output (``prov_base``) carries for that stream; deltas are never chained."""
    bases: dict[str, tuple[int, ...]] = {}
    named = json.loads(row["prov_base"]) if row.get("prov_base") else {}
    for stream, base in named.items():
        found = read_where(settings, NETWORK_OUTPUTS, f"network = {sql_text(network.name)} AND "
                           f"output = {sql_text(base)}", ["provenance"])
        if found.empty:
            raise ProvenanceExpiredError(f"the full id set {row['output']} is encoded against "
                                         f"({base}) is missing from {NETWORK_OUTPUTS}")
        bases[stream] = decode_per_stream(bytes(found["provenance"].iloc[0]))[stream]
    return decode_per_stream(bytes(row["provenance"]), bases)


def _stored_context(settings: Settings, network: StreamNetwork,
                    row: dict[str, Any]) -> dict[str, list[Any]]:
    """The group's kept readings a replay of ``row`` needs, per input stream: those in its
    covering hull and those within the network's horizon of them in event time."""
    import pandas as pd

    group = f"sensor = {sql_text(row['grp'])} AND " if network.partition else ""
    lo, hi = int(row["ids_lo"]), int(row["ids_hi"])
    inside = read_where(settings, tables.READINGS, f"{group}id BETWEEN {lo} AND {hi}", ["ts"])
    if inside.empty:
        raise ProvenanceExpiredError(f"the readings of {row['output']} are gone")
    horizon = network.horizon_s()
    start = timestamp_literal(inside["ts"].min() - pd.Timedelta(seconds=horizon))
    end = timestamp_literal(inside["ts"].max() + pd.Timedelta(seconds=horizon))
    around = read_where(settings, tables.READINGS, f"{group}ts BETWEEN {start} AND {end}",
                        ["id", "sensor", "ts", "value"])
    around = _without_drops(settings, network, around).sort_values("id")
    readings = readings_of(around)
    return {stream: [r for r in readings if predicate(
        {"id": r.id, "sensor": r.sensor, "ts": r.ts, "value": r.value})]
        for stream, predicate in network.streams.items()}


def _without_drops(settings: Settings, network: StreamNetwork,
                   readings: pd.DataFrame) -> pd.DataFrame:
    if readings.empty or not deltars.table_exists(settings, NETWORK_DROPS):
        return readings
    low, high = int(readings["id"].min()), int(readings["id"].max())
    drops = read_where(settings, NETWORK_DROPS, f"network = {sql_text(network.name)} AND "
                       f"id BETWEEN {low} AND {high}", ["id"])
    return readings[~readings["id"].isin(set(drops["id"]))]


def explain_output(settings: Settings, network_name: str, output: str) -> OutputExplanation:
    """Output ``output`` (its id as JSON, as ``network_outputs`` holds it) of network
    ``network_name`` with the readings behind it."""
    network, _mode = _network(settings, network_name)
    if not deltars.table_exists(settings, NETWORK_OUTPUTS):
        raise ConfigError(f"network '{network_name}' has no outputs yet")
    found = read_where(settings, NETWORK_OUTPUTS, f"network = {sql_text(network_name)} AND "
                       f"output = {sql_text(output)}")
    if found.empty:
        raise ConfigError(f"network '{network_name}' has no output {output}")
    row = found.iloc[-1].to_dict()
    retained = retained_from(settings)
    if row["ids_lo"] is not None and (retained is None or int(row["ids_lo"]) < retained):
        raise ProvenanceExpiredError(f"the readings behind {output} are past the readings' "
                                     "retention (deleted by housekeeping)")
    ids = output_ids(settings, network, row)
    every = sorted({i for part in ids.values() for i in part})
    looked_up = (read_where(settings, tables.READINGS, f"id IN ({', '.join(map(str, every))})",
                            ["id", "sensor", "ts", "value"]) if every else None)
    by_id = {} if looked_up is None else {
        r.id: (r.id, r.sensor, r.ts, r.value) for r in readings_of(looked_up)}
    return OutputExplanation(network_name, output, str(row["mode"]), json.loads(row["data"]),
                             {stream: [by_id[i] for i in part if i in by_id]
                              for stream, part in ids.items()})


def latest_outputs(settings: Settings, network_name: str, limit: int = 20) -> list[dict[str, Any]]:
    """Network ``network_name``'s ``limit`` latest outputs (by event time): id and attributes."""
    _network(settings, network_name)
    if not deltars.table_exists(settings, NETWORK_OUTPUTS):
        return []
    found = read_where(settings, NETWORK_OUTPUTS, f"network = {sql_text(network_name)} "
                       f"ORDER BY ts DESC, output LIMIT {int(limit)}",
                       ["output", "grp", "ts", "data"])
    return [{"output": row["output"], "group": row["grp"], "data": json.loads(row["data"])}
            for row in found.to_dict("records")]
