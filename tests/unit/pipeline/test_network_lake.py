"""Stream networks on a real lake, in process: random readings ingested, a network run in
Reduced-Eager and in Replay-Lazy mode; every output's readings, decoded or replayed, equal the
provenance the network computed, and a request past the readings' retention says so."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from aspen.errors import ConfigError, ProvenanceExpiredError
from aspen.lake import deltars, tables
from aspen.lake.housekeeping import purge_readings
from aspen.lake.ingest import ingest_files
from aspen.readings.network_provenance import explain_output
from aspen.readings.network_tables import (
    NETWORK_DROPS,
    NETWORK_OUTPUTS,
    output_text,
    readings_of,
    record_network,
    run_network_locally,
)
from aspen.settings import Settings
from aspen.streams.incremental import NetworkState
from aspen.streams.networks import parse_network

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

NETWORKS: dict[str, dict[str, Any]] = {
    "sliding": {"aggregate": {"select": {"stream": "readings"}, "where": "value > 30"},
                "window": {"seconds": 20, "slide": 10},
                "functions": ["avg(value)", "count(value)"]},
    "counted": {"aggregate": {"project": {"stream": "readings"}, "columns": {
        "sensor": "sensor", "ts": "ts", "f": "value * 9 / 5 + 32"}},
        "window": {"rows": 4, "slide": 2}, "functions": ["max(f)"]},
    "paired": {"join": [{"select": {"stream": "readings"}, "where": "value > 70", "name": "hot"},
                        {"aggregate": {"stream": "readings"}, "window": {"seconds": 15},
                         "functions": ["min(value) AS value"], "name": "low"}],
               "within_s": 20, "key": None},
    # a count window under a join: a replay of the join's interval cannot anchor its grid,
    # so Replay-Lazy runs the group's readings up to the interval's end instead
    "anchored": {"join": [{"select": {"stream": "readings"}, "where": "value > 60",
                           "name": "high"},
                          {"aggregate": {"stream": "readings"}, "window": {"rows": 3, "slide": 2},
                           "functions": ["avg(value) AS value"], "name": "trio"}],
                 "within_s": 15},
    "merged": {"aggregate": {"union": [
        {"select": {"stream": "readings"}, "where": "sensor = 's1'", "name": "one"},
        {"select": {"stream": "readings"}, "where": "value < 20", "name": "cold"}]},
        "window": {"seconds": 30}, "functions": ["sum(value)"]},
}


def _ingest(lake: Settings, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    rows = []
    for step in range(60):
        sensor = rng.choice(["s1", "s2", "s3"])
        seconds = step * 3 + rng.uniform(-8, 2)  # some readings out of order, a few late
        ts = (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
        rows.append({"op": "insert", "relation": "reading", "sensor": sensor, "ts": ts,
                     "value": round(rng.uniform(0, 100), 1)})
    path = tmp_path / f"readings-{seed}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    ingest_files(lake, [path])


def _spec(name: str, mode: str) -> dict[str, Any]:
    return {"name": f"{name}_{mode}", "lateness_s": 5, "query": NETWORKS[name]}


def _expected(lake: Settings, spec: dict[str, Any]) -> dict[str, dict[str, list[int]]]:
    """Every final output's provenance, each group's readings through a fresh state."""
    network = parse_network(spec)
    readings = deltars.read_table(lake, tables.READINGS).sort_values("id")
    groups = readings["sensor"] if network.partition else [""] * len(readings)
    found = {}
    for _group, rows in readings.groupby(list(groups)):
        for row in NetworkState(network).step(readings_of(rows)).outputs:
            found[output_text(row.id)] = {s: sorted(ids) for s, ids in row.prov.items()}
    return found


@pytest.mark.parametrize("name", sorted(NETWORKS))
@pytest.mark.parametrize("seed", [1, 2])
def test_decoded_and_replayed_readings_equal_the_networks_provenance(
        lake: Settings, tmp_path: Path, name: str, seed: int) -> None:
    _ingest(lake, tmp_path, seed)
    expected = _expected(lake, _spec(name, "eager"))
    assert expected, "the case should have outputs"
    for mode in ("eager", "lazy"):
        spec = _spec(name, mode)
        run_network_locally(lake, parse_network(spec), mode)
        outputs = deltars.read_table(lake, NETWORK_OUTPUTS)
        outputs = outputs[outputs["network"] == spec["name"]]
        assert sorted(outputs["output"]) == sorted(expected)
        if mode == "eager" and name == "sliding":  # overlapping windows: deltas are written
            assert outputs["prov_base"].notna().any()
        for output in outputs["output"]:
            found = explain_output(lake, spec["name"], output)
            got = {s: [r[0] for r in rows] for s, rows in found.readings.items()}
            assert got == expected[output], (mode, output)


def test_late_readings_are_dropped_and_recorded(lake: Settings, tmp_path: Path) -> None:
    _ingest(lake, tmp_path, 3)
    spec = {"name": "strict", "lateness_s": 0, "query": NETWORKS["sliding"]}
    run_network_locally(lake, parse_network(spec), "eager")
    drops = deltars.read_table(lake, NETWORK_DROPS)
    assert len(drops) > 0 and set(drops["reason"]) == {"late"}
    readings = deltars.read_table(lake, tables.READINGS).sort_values("id")
    late = set()
    for _sensor, rows in readings.groupby("sensor"):
        newest = None
        for i, ts in zip(rows["id"], rows["ts"], strict=True):
            if newest is not None and ts < newest:
                late.add(int(i))
            newest = ts if newest is None else max(newest, ts)
    assert set(drops["id"]) == late


def test_a_request_past_the_retention_says_so(lake: Settings, tmp_path: Path) -> None:
    _ingest(lake, tmp_path, 4)
    spec = _spec("sliding", "eager")
    run_network_locally(lake, parse_network(spec), "eager")
    outputs = deltars.read_table(lake, NETWORK_OUTPUTS).sort_values("ids_lo")
    first = outputs["output"].iloc[0]
    explain_output(lake, spec["name"], first)
    purge_readings(lake, retention_hours=0.0, now=datetime.now(UTC) + timedelta(hours=1))
    with pytest.raises(ProvenanceExpiredError, match="retention"):
        explain_output(lake, spec["name"], first)


def test_a_name_is_bound_to_its_first_definition(lake: Settings) -> None:
    record_network(lake, parse_network(_spec("sliding", "eager")), "eager")
    record_network(lake, parse_network(_spec("sliding", "eager")), "eager")  # the same: fine
    with pytest.raises(ConfigError, match="another definition"):
        record_network(lake, parse_network({**_spec("counted", "eager"),
                                            "name": "sliding_eager"}), "eager")
