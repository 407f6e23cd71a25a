"""The in-process apply and TTL sweep, without Spark: they follow the log (insert, renewal,
replacement, delete, notes, TTL), and a crash after any of their writes, then a rerun, gives
the tables of one clean run."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from apply_logs import DAY1, DAY2, T0, batches, crashed, log_batches, snapshot
from deltalake import DeltaTable
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings

from aspen.lake import tables
from aspen.lake.apply_local import apply_in_process, pending_updates
from aspen.lake.expire_local import expire_in_process
from aspen.settings import Settings

#: The crash points of the in-process apply (after each table it writes) and sweep.
APPLY_POINTS = ("apply:after-fold", "apply:after-merge-variables", "apply:after-merge-link",
                "apply:after-merge-sensor", "apply:after-merge-triggered",
                "apply:after-merge-region_seed", "apply:after-merge-apply_notes",
                "apply:after-apply_state")
SWEEP_POINTS = ("expire:after-ingest_files", "expire:after-kill", "expire:after-apply_state")
SWEEP_AT = T0 + timedelta(minutes=10)


def test_the_in_process_apply_follows_the_log(lake: Settings) -> None:
    assert pending_updates(lake) == 0
    log_batches(lake, [DAY1])
    assert pending_updates(lake) == 8
    report = apply_in_process(lake)
    assert (report.batches, report.updates, report.born, report.died) == ([1], 8, 7, 1)
    assert report.notes == ["delete of link n1→n9 ignored: not live"]
    log_batches(lake, [DAY2])
    report = apply_in_process(lake)
    assert (report.batches, report.born, report.died) == ([2], 1, 4)
    assert report.notes == ["delete of triggered s9 ignored: not live"]
    assert apply_in_process(lake).batches == []  # nothing new: nothing happens

    tables_now = snapshot(lake)
    registry = {r["var"]: r for r in tables_now[tables.VARIABLES]}
    assert {v: (r["death"], r["deleted_batch"], r["deleted_seq"]) for v, r in registry.items()
            if r["deleted_batch"] is not None} == {
        "v1": ("deleted", 2, 9), "v2": ("deleted", 2, 9), "v3": ("replaced", 1, 4),
        "v6": ("replaced", 2, 10), "v8": ("deleted", 2, 11)}
    assert registry["v1"]["key"] == '["a","b"]' and registry["v1"]["values"] == '["a","b",1.0]'
    start = 1767225600 * 10**6  # 2026-01-01T00:00:00Z in microseconds
    assert (registry["v1"]["inserted_at"], registry["v1"]["expires_at"]) == (
        start, start + 600 * 10**6)
    assert [r["var"] for r in tables_now["link"]] == ["v4"]
    assert [(r["var"], r["y"], r["batch_id"], r["seq"]) for r in tables_now["sensor"]] == [
        ("v10", 9.0, 2, 10)]
    assert tables_now["region_seed"] == []
    assert [(n["batch_id"], n["seq"], n["key"]) for n in tables_now[tables.APPLY_NOTES]] == [
        (1, 5, '["n1","n9"]'), (2, 12, '["s9"]')]
    assert [(r["batch_id"], r["updates"], r["born"], r["died"], r["notes"])
            for r in tables_now[tables.APPLY_STATE]] == [(1, 8, 7, 1, 1), (2, 4, 1, 4, 1)]
    for name in (tables.VARIABLES, tables.APPLY_STATE, *tables.BASE_TABLES):
        protocol = DeltaTable(lake.table_uri(name)).protocol()  # Spark reads and MERGEs them
        assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2), name


def test_the_in_process_sweep_kills_only_the_expired_instance(lake: Settings) -> None:
    log_batches(lake, [DAY1])
    early = expire_in_process(lake, T0 + timedelta(seconds=599))  # applies batch 1 first
    assert (early.batch_id, early.expired) == (None, 0)
    report = expire_in_process(lake, SWEEP_AT)
    assert (report.batch_id, report.expired, report.per_relation) == (2, 1, {"link": 1})
    after = snapshot(lake)
    registry = {r["var"]: r for r in after[tables.VARIABLES]}
    assert (registry["v1"]["death"], registry["v1"]["deleted_batch"]) == ("expired", 2)
    assert registry["v1"]["deleted_at"] == registry["v1"]["expires_at"]
    assert [r["var"] for r in after["link"]] == ["v2", "v4"]  # the renewal lives on
    assert after[tables.INGEST_FILES][-1]["source"] == f"expire@{SWEEP_AT.isoformat()}"
    assert after[tables.APPLY_STATE][-1] == {"batch_id": 2, "updates": 0, "born": 0, "died": 1,
                                             "notes": 0}
    assert expire_in_process(lake, SWEEP_AT).expired == 0


@pytest.mark.slow
@hypothesis_settings(max_examples=8, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow,
                                            HealthCheck.function_scoped_fixture])
@given(applied=batches(max_batches=2), pending=batches(max_batches=3))
def test_a_crash_after_any_write_then_a_rerun_gives_the_clean_tables(
        applied: list[list[dict]], pending: list[list[dict]]) -> None:
    with tempfile.TemporaryDirectory() as root:
        def lake_with_pending(name: str) -> Settings:
            lake = Settings(lake=str(Path(root) / name))
            log_batches(lake, applied)
            apply_in_process(lake)
            log_batches(lake, pending)
            return lake

        clean = lake_with_pending("clean")
        report = apply_in_process(clean)
        expected = snapshot(clean)
        for number, point in enumerate(APPLY_POINTS):
            lake = lake_with_pending(f"crashed-{number}")
            if crashed(lambda lake=lake: apply_in_process(lake), point):
                rerun = apply_in_process(lake)
                if point == "apply:after-apply_state":  # committed: nothing left to do
                    assert rerun.batches == [], point
                else:
                    assert rerun == report, point
            assert snapshot(lake) == expected, point


def _without_sweep_batches(tables_now: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """The tables with the sweep's batch numbers left out: a crash after the sweep allocated
    its batch makes the rerun sweep under the next one."""
    out = dict(tables_now)
    out[tables.VARIABLES] = [
        {**r, "deleted_batch": None} if r["death"] == "expired" else r
        for r in tables_now[tables.VARIABLES]]
    for name in (tables.INGEST_FILES, tables.APPLY_STATE):
        out.pop(name)
    return out


@pytest.mark.slow
@hypothesis_settings(max_examples=6, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow,
                                            HealthCheck.function_scoped_fixture])
@given(logged=batches(max_batches=3))
def test_a_sweep_crashed_after_any_write_then_rerun_kills_the_same_instances(
        logged: list[list[dict]]) -> None:
    with tempfile.TemporaryDirectory() as root:
        clean = Settings(lake=str(Path(root) / "clean"))
        log_batches(clean, logged)
        expire_in_process(clean, SWEEP_AT)
        apply_in_process(clean)
        expected = _without_sweep_batches(snapshot(clean))
        for number, point in enumerate(SWEEP_POINTS):
            lake = Settings(lake=str(Path(root) / f"crashed-{number}"))
            log_batches(lake, logged)
            crashed(lambda lake=lake: expire_in_process(lake, SWEEP_AT), point)
            expire_in_process(lake, SWEEP_AT)
            apply_in_process(lake)  # a batch allocated and left behind is marked applied
            after = snapshot(lake)
            assert _without_sweep_batches(after) == expected, point
            applied = {r["batch_id"] for r in after[tables.APPLY_STATE]}
            assert applied == {r["batch_id"] for r in after[tables.INGEST_FILES]}, point
