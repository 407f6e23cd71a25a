"""The chain region ← triggered sensors ← windows ← readings: sensors triggered by the rule's
decisions (run in process, as the stream's state store runs it) join a region; `aspen explain
active_region R S --depth readings` follows each triggered sensor of the witnesses to the
window that triggered it and that window's readings; a sensor triggered by a plain update says
so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aspen.cli.main import main
from aspen.lake.ingest import ingest_files
from aspen.pipeline.maintain_local import maintain_local
from aspen.readings.rule_local import run_rule_locally
from aspen.readings.rule_provenance import trigger_origins
from aspen.settings import Settings
from aspen.streams.rules import TriggerRule


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _reading(sensor: str, second: int, value: float) -> dict:
    return {"op": "insert", "relation": "reading", "sensor": sensor,
            "ts": f"2026-12-01T10:{second // 60:02d}:{second % 60:02d}Z", "value": value}


@pytest.fixture
def lake_with_chain(lake: Settings, tmp_path: Path) -> Settings:
    """Sensors a, b, c 10 m apart; region r1 seeded at a; a and b read hot in the first minute
    (the rule triggers them), c is triggered by a plain update."""
    ingest_files(lake, [_write(tmp_path / "field.jsonl", [
        {"op": "insert", "relation": "sensor", "id": "a", "x": 0.0, "y": 0.0},
        {"op": "insert", "relation": "sensor", "id": "b", "x": 10.0, "y": 0.0},
        {"op": "insert", "relation": "sensor", "id": "c", "x": 20.0, "y": 0.0},
        {"op": "insert", "relation": "region_seed", "region": "r1", "id": "a"},
        {"op": "insert", "relation": "triggered", "id": "c"},
        *[_reading(s, t, 95.0 + t / 10) for t in (5, 20, 40) for s in ("a", "b")],
        *[_reading(s, 200, 50.0) for s in ("a", "b")],  # closes the first window
    ])])
    run_rule_locally(lake, TriggerRule(), "lazy")
    maintain_local(lake)
    return lake


def test_each_triggered_sensor_leads_to_its_window_and_readings(
        lake_with_chain: Settings) -> None:
    [origin] = trigger_origins(lake_with_chain, "b")
    assert origin.rule == "avg_above" and origin.source.startswith("stream-avg_above-")
    assert origin.window is not None and origin.window.decision == "insert"
    assert [value for _, _, value in origin.window.readings] == [95.5, 97.0, 99.0]
    [plain] = trigger_origins(lake_with_chain, "c")
    assert plain.rule is None and plain.window is None and plain.source == "field.jsonl"


def test_explain_active_region_follows_the_chain_down_to_readings(
        lake_with_chain: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    lake = ["--lake", lake_with_chain.lake]
    assert main([*lake, "explain", "active_region", "r1", "c", "--depth", "readings"]) == 0
    out = capsys.readouterr().out
    assert "triggered(a) [" in out and "← rule avg_above window [2026-12-01 10:00:00, " \
        "10:01:00) avg 97.17 ← 3 reading(s):" in out
    assert "triggered(c) [" in out and "← logged by field.jsonl (no rule's window" in out
    assert out.count("      reading ") == 6  # a's three and b's three
    assert main([*lake, "explain", "active_region", "r1", "c", "--depth", "readings",
                 "--format", "json"]) == 0
    [explained] = json.loads(capsys.readouterr().out)
    chain = explained["triggered_by"]
    assert sorted(chain) == ["a", "b", "c"]
    assert [r["value"] for r in chain["b"][0]["window"]["readings"]] == [95.5, 97.0, 99.0]


def test_depth_readings_is_refused_where_it_means_nothing(
        lake_with_chain: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lake", lake_with_chain.lake, "explain", "reachable", "a", "b",
                 "--depth", "readings"]) == 2
    assert "--depth readings applies to active_region" in capsys.readouterr().err


def test_readings_past_their_retention_are_purged_and_requests_say_so(
        lake_with_chain: Settings) -> None:
    from datetime import UTC, datetime, timedelta

    from aspen.errors import ProvenanceExpiredError
    from aspen.lake.housekeeping import purge_readings
    from aspen.readings.rule_provenance import explain_triggered

    rule = TriggerRule()
    assert purge_readings(lake_with_chain, 1.0) == 0  # ingested just now: kept
    assert explain_triggered(lake_with_chain, "a", rule).windows[0].readings
    later = datetime.now(UTC) + timedelta(hours=2)
    assert purge_readings(lake_with_chain, 1.0, now=later) == 8
    with pytest.raises(ProvenanceExpiredError, match="past the readings' retention"):
        explain_triggered(lake_with_chain, "a", rule)
