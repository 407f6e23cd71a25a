"""A stream network on Spark Structured Streaming, end to end: one query with a selection, a
projection computing a value, a union, sliding time windows, count windows sliding by two and
a windowed join, run per sensor in Spark's state store over readings ingested in three files
(restarts from the checkpoint between them; the last run as the pipeline's readings task runs
every network the lake ran); its outputs and drops equal the network run in process over the
same readings, Replay-Lazy rebuilds exactly the readings Reduced-Eager keeps, and a
micro-batch crashed in its sink reruns to the same tables."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from aspen.errors import InjectedCrash
from aspen.lake import deltars, tables
from aspen.lake.ingest import ingest_files
from aspen.readings.network_provenance import explain_output
from aspen.readings.network_stream import run_network_stream, run_recorded_networks
from aspen.readings.network_tables import NETWORK_DROPS, NETWORK_OUTPUTS, output_text, readings_of
from aspen.settings import Settings
from aspen.streams.incremental import NetworkState
from aspen.streams.networks import parse_network

pytestmark = [pytest.mark.spark, pytest.mark.slow]

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
QUERY = {
    "join": [
        {"aggregate": {"project": {"select": {"stream": "readings"}, "where": "value < 350",
                                   "name": "sane"},
                       "columns": {"sensor": "sensor", "ts": "ts",
                                   "f": "round(value * 9 / 5 + 32, 1)"}, "name": "fahrenheit"},
         "window": {"rows": 4, "slide": 2}, "functions": ["avg(f) AS f"], "name": "smooth"},
        {"aggregate": {"union": [
            {"select": {"stream": "readings"}, "where": "value > 90", "name": "hot"},
            {"select": {"stream": "readings"}, "where": "value < 10", "name": "cold"}],
            "name": "extremes"},
         "window": {"seconds": 20, "slide": 10}, "functions": ["count(value)", "max(value)"],
         "name": "spread"}],
    "within_s": 30, "name": "flagged"}


def _network(name: str):
    return parse_network({"name": name, "lateness_s": 15, "query": QUERY})


def _files(tmp_path: Path) -> list[Path]:
    rng = random.Random(11)
    rows = []
    for step in range(240):
        sensor = rng.choice(["s1", "s2", "s3"])
        seconds = step * 1.5 + rng.uniform(-20, 1)  # out of order; some beyond the lateness
        ts = (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
        value = rng.choice([rng.uniform(0, 12), rng.uniform(40, 60), rng.uniform(88, 100),
                            400.0])
        rows.append({"op": "insert", "relation": "reading", "sensor": sensor, "ts": ts,
                     "value": round(value, 2)})
    paths = []
    for i, part in enumerate((rows[:100], rows[100:170], rows[170:])):
        path = tmp_path / f"readings-{i}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in part))
        paths.append(path)
    return paths


def _in_process(lake: Settings, name: str) -> tuple[dict, list]:
    network = _network(name)
    readings = deltars.read_table(lake, tables.READINGS).sort_values("id")
    outputs, drops = {}, []
    for _sensor, rows in readings.groupby("sensor"):
        step = NetworkState(network).step(readings_of(rows))
        outputs |= {output_text(row.id): {s: sorted(ids) for s, ids in row.prov.items()}
                    for row in step.outputs}
        drops += [(r.id, why) for r, why in step.dropped]
    return outputs, sorted(drops)


def _streamed(lake: Settings, name: str) -> tuple[list, list]:
    outputs = deltars.read_table(lake, NETWORK_OUTPUTS)
    drops = deltars.read_table(lake, NETWORK_DROPS)
    drops = drops[drops["network"] == name]
    return (sorted(outputs[outputs["network"] == name]["output"]),
            sorted(zip(drops["id"], drops["reason"], strict=True)))


def test_a_network_on_spark_equals_it_in_process_across_a_restart_in_both_modes(
        spark, lake: Settings, tmp_path: Path) -> None:
    first, second, third = _files(tmp_path)
    ingest_files(lake, [first])
    for name, mode in (("net_eager", "eager"), ("net_lazy", "lazy")):
        assert run_network_stream(spark, lake, _network(name), mode).outputs > 0
    ingest_files(lake, [second])
    for name, mode in (("net_eager", "eager"), ("net_lazy", "lazy")):
        run_network_stream(spark, lake, _network(name), mode)  # from the checkpoint
    ingest_files(lake, [third])
    # as the pipeline's readings task does: every network the lake ran, in its mode
    reports = run_recorded_networks(spark, lake)
    assert sorted((r.network, r.mode) for r in reports) == [("net_eager", "eager"),
                                                            ("net_lazy", "lazy")]

    expected, expected_drops = _in_process(lake, "net_eager")
    assert len(expected) > 20 and expected_drops
    for name in ("net_eager", "net_lazy"):
        outputs, drops = _streamed(lake, name)
        assert outputs == sorted(expected)  # nothing lost or doubled by the restart
        assert [(int(i), why) for i, why in drops] == expected_drops
    for output in sorted(expected)[::7]:
        for name in ("net_eager", "net_lazy"):
            found = explain_output(lake, name, output)
            assert {s: [r[0] for r in rows] for s, rows in found.readings.items()} == \
                expected[output], (name, output)


def test_a_network_micro_batch_crashed_in_its_sink_reruns_to_the_same_tables(
        spark, lake: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ingest_files(lake, _files(tmp_path))
    monkeypatch.setenv("ASPEN_CRASH_AT", "network:after-outputs")
    with pytest.raises(Exception) as crash:  # noqa: PT011 -- Spark wraps the injected crash
        run_network_stream(spark, lake, _network("crashy"), "eager")
    assert "InjectedCrash" in str(crash.value) or isinstance(crash.value, InjectedCrash)
    monkeypatch.delenv("ASPEN_CRASH_AT")
    run_network_stream(spark, lake, _network("crashy"), "eager")
    expected, expected_drops = _in_process(lake, "crashy")
    outputs, drops = _streamed(lake, "crashy")
    assert outputs == sorted(expected)
    assert [(int(i), why) for i, why in drops] == expected_drops
