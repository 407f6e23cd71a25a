"""Replay-Lazy for the zone rule: a zone decision keeps only the covering interval of its
readings, and a request rebuilds them by replaying its zone's readings; on random streams the
rebuilt ids equal the ids Reduced-Eager keeps, for triggers and un-triggers alike."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from aspen.lake import deltars, tables
from aspen.lake.apply_local import apply_in_process
from aspen.lake.ingest import ingest_files
from aspen.readings.rule_provenance import window_ids
from aspen.readings.rule_rows import zone_step_frame
from aspen.readings.rule_tables import READING_WINDOWS, record_rule, write_micro_batch
from aspen.settings import Settings
from aspen.streams.zones import ZoneReading, ZoneRule, ZoneState

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
FIELD = {"a": (0.0, 0.0), "b": (10.0, 0.0), "c": (20.0, 0.0), "d": (60.0, 0.0),
         "e": (70.0, 0.0), "f": (80.0, 0.0)}
ZONE = {"a": "z0_0", "b": "z0_0", "c": "z0_0", "d": "z1_0", "e": "z1_0", "f": "z1_0"}


def _lake(lake: Settings, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    rows = [{"op": "insert", "relation": "sensor", "id": s, "x": x, "y": y}
            for s, (x, y) in FIELD.items()]
    for step in range(150):
        sensor = rng.choice(sorted(FIELD))
        hot = (step // 25) % 2 == 0  # hot and cool spells: triggers and un-triggers
        value = (95.0 if hot else 80.0) + rng.uniform(-8, 8)
        ts = (T0 + timedelta(seconds=step * 0.7 + rng.uniform(-3, 0)))
        rows.append({"op": "insert", "relation": "reading", "sensor": sensor,
                     "ts": ts.isoformat().replace("+00:00", "Z"), "value": round(value, 2)})
    path = tmp_path / f"field-{seed}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    ingest_files(lake, [path])
    apply_in_process(lake)


def _run(lake: Settings, rule: ZoneRule, mode: str) -> None:
    """The zone rule over every reading in process, written as the stream's sink writes."""
    readings = deltars.read_table(lake, tables.READINGS).sort_values("id")
    frames = []
    for zone in ("z0_0", "z1_0"):
        mine = readings[readings["sensor"].map(ZONE) == zone]
        stream = [ZoneReading(int(i), s, int(ts.value // 1000), float(v)) for i, s, ts, v in
                  zip(mine["id"], mine["sensor"], mine["ts"], mine["value"], strict=True)]
        frames.append(zone_step_frame(rule, zone, stream, ZoneState(), mode))
    record_rule(lake, rule, mode)
    write_micro_batch(lake, rule, mode, pd.concat(frames, ignore_index=True), 0,
                      log_decisions=False)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replayed_zone_decisions_equal_the_eager_ones(lake: Settings, tmp_path: Path,
                                                      seed: int) -> None:
    _lake(lake, tmp_path, seed)
    eager, lazy = ZoneRule(name="zone_eager", count=4), ZoneRule(name="zone_lazy", count=4)
    _run(lake, eager, "eager")
    _run(lake, lazy, "lazy")
    windows = deltars.read_table(lake, READING_WINDOWS)
    kept = {}
    for row in windows[windows["rule"] == "zone_eager"].to_dict("records"):
        kept[(row["sensor"], row["decision"], row["window_end"])] = window_ids(lake, row, eager)
    lazy_rows = windows[windows["rule"] == "zone_lazy"].to_dict("records")
    assert {row["decision"] for row in lazy_rows} == {"insert", "delete"}
    assert all(row["provenance"] is None for row in lazy_rows)
    got = {(row["sensor"], row["decision"], row["window_end"]): window_ids(lake, row, lazy)
           for row in lazy_rows}
    assert got == kept
