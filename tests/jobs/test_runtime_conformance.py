"""One conformance suite for every maintenance runtime (local, Spark), through the one batch
skeleton: after every batch each view, read as its snapshot plus the change log, equals
from-scratch evaluation; a batch writes its view changes in one commit of ``view_changes`` and
leaves the snapshots alone; a rebuild and a full log compact; nothing new is nothing to do; and
a crash at each of the skeleton's crash points reruns to the same views."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from aspen.catalog import VIEWS
from aspen.errors import InjectedCrash
from aspen.lake import view_log
from aspen.lake.committed import read_committed
from aspen.lake.deltars import table_version
from aspen.lake.ingest import ingest_files
from aspen.pipeline import ledger
from aspen.pipeline.batch import MaintainReport
from aspen.pipeline.verify import verify_lake
from aspen.settings import Settings

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LINKS = [("a", "b", 1.0), ("b", "c", 1.0), ("c", "a", 2.0), ("a", "c", 4.0), ("c", "d", 1.0)]
FIRST = [{"op": "insert", "relation": "link", "src": s, "dst": d, "cost": c}
         for s, d, c in LINKS] + [
    {"op": "insert", "relation": "sensor", "id": "s1", "x": 0.0, "y": 0.0},
    {"op": "insert", "relation": "sensor", "id": "s2", "x": 10.0, "y": 0.0},
    {"op": "insert", "relation": "region_seed", "region": "r1", "id": "s1"},
    {"op": "insert", "relation": "triggered", "id": "s1"},
    {"op": "insert", "relation": "triggered", "id": "s2"},
]
#: Later batches: a deletion, a re-insertion at another cost, an un-triggered sensor.
LATER = [
    [{"op": "delete", "relation": "link", "src": "b", "dst": "c"}],
    [{"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 3.0},
     {"op": "delete", "relation": "triggered", "id": "s2"}],
]


def _runtime(name: str, spark) -> Callable[[Settings], MaintainReport]:
    if name == "local":
        from aspen.pipeline.maintain_local import maintain_local

        return lambda lake: maintain_local(lake, partitions=2, mode="lazy")
    from aspen.pipeline.maintain_spark import maintain_spark

    return lambda lake: maintain_spark(lake, spark=spark, partitions=2, mode="lazy")


def _ingest(lake: Settings, folder: Path, name: str, records: list[dict]) -> None:
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest_files(lake, [path])


def _views(lake: Settings) -> dict[str, set[tuple]]:
    return {view: {tuple(str(v) for v in row[:-4])
                   for row in read_committed(lake, view).itertuples(index=False)}
            for view in VIEWS}


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_batches_append_changes_and_match_scratch(runtime: str, spark, lake: Settings,
                                                   tmp_path: Path) -> None:
    maintain = _runtime(runtime, spark)
    _ingest(lake, tmp_path, "first.jsonl", FIRST)
    first = maintain(lake)
    assert first.compacted  # a fresh lake builds the views: snapshots, an empty log
    assert view_log.log_size(lake)[1] == 0 and verify_lake(lake).ok
    assert maintain(lake).nothing_to_do
    for number, records in enumerate(LATER, start=2):
        snapshots = {view: table_version(lake, view) for view in VIEWS}
        log_version = table_version(lake, view_log.VIEW_CHANGES)
        _ingest(lake, tmp_path, f"batch{number}.jsonl", records)
        report = maintain(lake)
        assert not report.compacted and report.batch_id == number
        # one commit of the log, no snapshot rewritten
        assert table_version(lake, view_log.VIEW_CHANGES) == log_version + 1
        assert {view: table_version(lake, view) for view in VIEWS} == snapshots
        assert verify_lake(lake).ok
        assert report.view_sizes == {view: len(read_committed(lake, view)) for view in VIEWS}


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_a_full_log_is_compacted(runtime: str, spark, lake: Settings, tmp_path: Path,
                                 monkeypatch) -> None:
    maintain = _runtime(runtime, spark)
    _ingest(lake, tmp_path, "first.jsonl", FIRST)
    maintain(lake)
    monkeypatch.setattr(view_log, "COMPACT_AFTER_FILES", 1)
    _ingest(lake, tmp_path, "second.jsonl", LATER[0])
    assert maintain(lake).compacted is False  # the log had no file yet
    before = _views(lake)
    _ingest(lake, tmp_path, "third.jsonl", LATER[1])
    report = maintain(lake)
    assert report.compacted and view_log.log_size(lake)[1] == 0
    assert verify_lake(lake).ok and _views(lake) != before


CRASH_POINTS = ["maintain:after-apply", "maintain:after-view-changes", "maintain:after-state",
                "maintain:after-metrics", "maintain:before-ledger"]


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_a_crash_at_each_point_reruns_to_the_same_views(runtime: str, spark, lake: Settings,
                                                        tmp_path: Path, monkeypatch) -> None:
    maintain = _runtime(runtime, spark)
    _ingest(lake, tmp_path, "first.jsonl", FIRST)
    maintain(lake)
    for number, point in enumerate(CRASH_POINTS, start=2):
        committed = _views(lake)
        records = LATER[number % 2]
        _ingest(lake, tmp_path, f"batch{number}.jsonl", records)
        monkeypatch.setenv("ASPEN_CRASH_AT", point)
        with pytest.raises(InjectedCrash):
            maintain(lake)
        monkeypatch.delenv("ASPEN_CRASH_AT")
        assert ledger.last_committed(lake).batch_id == number - 1
        assert _views(lake) == committed  # readers stay on the committed batch
        assert maintain(lake).batch_id == number
        assert verify_lake(lake).ok, point
