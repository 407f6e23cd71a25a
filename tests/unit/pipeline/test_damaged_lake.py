"""A missing or damaged view table, change-log file or engine state is refused before a batch
commits on top of it, in one line naming it and the remedy; ``maintain --rebuild`` then rebuilds
every view from the registry, the views equal from-scratch evaluation, and batches resume.

In process, local runtime, no Spark: a tiny lake (three links, a sensor region) with two
committed batches and one ingested but not yet maintained, copied for each test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from aspen.catalog import VIEWS
from aspen.cli.main import main
from aspen.lake.ingest import ingest_files
from aspen.lake.table_files import data_files
from aspen.lake.view_log import VIEW_CHANGES
from aspen.pipeline import ledger
from aspen.pipeline.integrity import DamagedLakeError, find_damage
from aspen.pipeline.maintain_local import maintain_local
from aspen.pipeline.verify import verify_lake
from aspen.settings import Settings

FIRST = [
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "c", "dst": "a", "cost": 2.0},
    {"op": "insert", "relation": "sensor", "id": "s1", "x": 0.0, "y": 0.0},
    {"op": "insert", "relation": "sensor", "id": "s2", "x": 10.0, "y": 0.0},
    {"op": "insert", "relation": "region_seed", "region": "r1", "id": "s1"},
    {"op": "insert", "relation": "triggered", "id": "s1"},
    {"op": "insert", "relation": "triggered", "id": "s2"},
]
SECOND = [{"op": "delete", "relation": "link", "src": "a", "dst": "b"}]
PENDING = [{"op": "insert", "relation": "link", "src": "c", "dst": "d", "cost": 3.0}]
LATER = [{"op": "delete", "relation": "triggered", "id": "s2"}]

#: The damages of the brief, each as a function of the lake folder.
KINDS = ("view-folder", "change-file", "state-removed", "state-truncated", "log-version")


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake with batches 1 and 2 committed and ingest batch 3 waiting."""
    root = tmp_path_factory.mktemp("template")
    lake = Settings(lake=str(root / "lake"))
    ingest_files(lake, [_write(root / "first.jsonl", FIRST)])
    maintain_local(lake)
    ingest_files(lake, [_write(root / "second.jsonl", SECOND)])
    maintain_local(lake)
    ingest_files(lake, [_write(root / "pending.jsonl", PENDING)])
    assert find_damage(lake) == []
    return root / "lake"


_copies = iter(range(10**6))


def _copy(template: Path, tmp_path: Path) -> Settings:
    target = tmp_path / f"lake-{next(_copies)}"
    shutil.copytree(template, target)
    return Settings(lake=str(target))


def _folder(lake: Settings, table: str) -> Path:
    return Path(lake.lake) / table


def _remove_data_file(lake: Settings, table: str) -> None:
    files = data_files(lake, table)
    assert files, f"{table} has no data file to damage"
    (_folder(lake, table) / files[-1][0]).unlink()


def _truncate_data_file(lake: Settings, table: str) -> None:
    files = data_files(lake, table)
    assert files, f"{table} has no data file to damage"
    path = _folder(lake, table) / files[-1][0]
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _drop_newest_commit(lake: Settings, table: str) -> None:
    newest = sorted((_folder(lake, table) / "_delta_log").glob("*.json"))[-1]
    newest.unlink()


def _damage(lake: Settings, kind: str, table: str = "reachable") -> None:
    if kind == "view-folder":
        shutil.rmtree(_folder(lake, table))
    elif kind == "change-file":
        _remove_data_file(lake, VIEW_CHANGES)
    elif kind == "state-removed":
        shutil.rmtree(_folder(lake, "engine_state"))
    elif kind == "state-truncated":
        _truncate_data_file(lake, "engine_state")
    elif kind == "log-version":
        _drop_newest_commit(lake, VIEW_CHANGES)  # the ledger committed a version now gone


def _versions(lake: Settings) -> dict[str, int]:
    """The latest version of every table that opens."""
    from deltalake import DeltaTable

    out = {}
    for folder in Path(lake.lake).iterdir():
        try:
            out[folder.name] = DeltaTable(str(folder)).version()
        except Exception:
            continue
    return out


def _refused_then_rebuilt(lake: Settings, table: str, tmp_path: Path) -> None:
    """The next batch is refused naming ``table`` and writing nothing; a rebuild repairs the
    lake; the next batches verify."""
    before = _versions(lake)
    with pytest.raises(DamagedLakeError) as refused:
        maintain_local(lake)
    line = str(refused.value)
    assert "\n" not in line and f"'{table}'" in line and "aspen maintain --rebuild" in line
    assert ledger.last_committed(lake).batch_id == 2
    assert _versions(lake) == before  # not even the pending ingest batch was applied

    report = maintain_local(lake, rebuild=True)
    assert report.batch_id == 3 and report.compacted
    assert find_damage(lake) == []
    result = verify_lake(lake)
    assert result.ok and result.sizes["reachable"] > 0

    ingest_files(lake, [_write(tmp_path / f"later-{next(_copies)}.jsonl", LATER)])
    report = maintain_local(lake)
    assert report.batch_id == 4 and not report.compacted and report.deleted_vars == 1
    assert verify_lake(lake).ok


@pytest.mark.parametrize("kind", KINDS)
def test_each_damage_is_refused_then_rebuilt(kind: str, template: Path, tmp_path: Path) -> None:
    lake = _copy(template, tmp_path)
    _damage(lake, kind)
    table = {"view-folder": "reachable", "state-removed": "engine_state",
             "state-truncated": "engine_state"}.get(kind, VIEW_CHANGES)
    _refused_then_rebuilt(lake, table, tmp_path)


@hsettings(max_examples=6, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.sampled_from((*VIEWS, VIEW_CHANGES, "engine_state")),
       how=st.sampled_from(("folder", "file", "truncate", "log")))
def test_any_table_damaged_any_way_is_refused_then_rebuilt(table: str, how: str, template: Path,
                                                           tmp_path: Path) -> None:
    assume(not (how == "log" and table == "engine_state"))  # the ledger names no version of it
    lake = _copy(template, tmp_path)
    if how == "folder":
        shutil.rmtree(_folder(lake, table))
    elif how == "file":
        _remove_data_file(lake, table)
    elif how == "truncate":
        _truncate_data_file(lake, table)
    else:
        _drop_newest_commit(lake, table)
    _refused_then_rebuilt(lake, table, tmp_path)


def test_an_unreadable_log_is_moved_aside_by_the_rebuild(template: Path, tmp_path: Path) -> None:
    lake = _copy(template, tmp_path)
    (_folder(lake, "min_cost") / "_delta_log" / "00000000000000000000.json").write_text("{")
    assert [d.table for d in find_damage(lake)] == ["min_cost"]
    report = maintain_local(lake, rebuild=True)
    [moved] = [line for line in report.notes if "moved" in line]
    assert "'min_cost'" in moved and "_damaged" in moved
    assert len(list((Path(lake.lake) / "_damaged").glob("min_cost-*"))) == 1
    assert verify_lake(lake).ok and find_damage(lake) == []


def test_the_cli_says_one_line_and_rebuild_repairs(template: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    lake = _copy(template, tmp_path)
    _damage(lake, "view-folder", "largest_regions")
    lines = []
    for argv in (["maintain", "--no-queries"], ["show", "largest_regions"], ["verify"]):
        assert main(["--lake", lake.lake, *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "'largest_regions' is missing" in err
        lines.append(err.split(": ", 1)[1])
    assert len(set(lines)) == 1  # the same line from each command
    assert main(["--lake", lake.lake, "maintain", "--rebuild", "--follow"]) == 2
    assert "--rebuild runs one batch" in capsys.readouterr().err
    assert main(["--lake", lake.lake, "maintain", "--rebuild"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("batch 3:") and "rebuilt every view" in out
    assert main(["--lake", lake.lake, "verify"]) == 0
    assert main(["--lake", lake.lake, "show", "largest_regions"]) == 0


def test_a_rebuild_of_a_sound_lake_equals_the_incremental_batch(template: Path,
                                                                 tmp_path: Path) -> None:
    from aspen.lake.committed import read_committed
    from aspen.pipeline.view_tables import row_to_tuple

    def views(lake: Settings) -> dict[str, set[tuple]]:
        return {v: {row_to_tuple(v, r) for r in read_committed(lake, v).to_dict("records")}
                for v in VIEWS}

    incremental, rebuilt = _copy(template, tmp_path), _copy(template, tmp_path)
    assert not maintain_local(incremental).compacted
    assert maintain_local(rebuilt, rebuild=True).batch_id == 3  # the pending batch with it
    assert views(rebuilt) == views(incremental)
    assert ("b", "d") in views(rebuilt)["reachable"]
    assert maintain_local(rebuilt, rebuild=True).batch_id == 4  # nothing new: still a batch


def test_only_the_last_runtime_s_state_counts(template: Path, tmp_path: Path) -> None:
    """A lake once maintained on Spark keeps ``node_state`` in the ledger's versions; the local
    runtime never reads it, so its loss is not damage (the views still are)."""
    lake = _copy(template, tmp_path)
    last, versions = ledger.last_and_versions(lake)
    with_spark_state = {**versions, "node_state": 7}  # no such table in this lake
    assert find_damage(lake, last, with_spark_state) == []
    spark_last = ledger.LedgerEntry(last.batch_id, last.through_ingest_batch, "spark", 2, "lazy")
    [damage] = find_damage(lake, spark_last, with_spark_state)
    assert damage.table == "node_state" and "missing" in damage.what
    shutil.rmtree(_folder(lake, "engine_state"))  # spark's batch did not need it either
    assert [d.table for d in find_damage(lake, spark_last, versions)] == []
