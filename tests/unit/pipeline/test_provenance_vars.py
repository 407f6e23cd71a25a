"""The variable index (``prov_index``): kept by every maintained batch, it lists at least every
(variable, pair) of the current rows and nothing a rebuild would not list but stale pairs;
questions answered through it equal questions answered from the views read whole; an older
lake without it still answers and gets it on its next batch; a batch killed after writing it
reruns to the same index.

The lakes are built in process (ingest, then ``maintain_local``: no Spark), on a few nodes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from small_lakes import batch_st, copy_lake, first_records, maintain_batch, template_lake

from aspen.catalog import VIEWS
from aspen.errors import InjectedCrash
from aspen.lake.committed import committed_batch, committed_versions, read_committed
from aspen.lake.deltars import read_table, table_exists, write_table
from aspen.lake.ingest import ingest_files
from aspen.pipeline import batch as batch_module
from aspen.pipeline.lake_provenance import LakeProvenance
from aspen.pipeline.maintain_local import maintain_local
from aspen.pipeline.provenance_index import names_of
from aspen.pipeline.provenance_vars import (
    PROV_INDEX_TABLE,
    bucket_of,
    count_with_formula,
    entries_of,
    index_version,
    pairs_of,
    rebuild,
)
from aspen.settings import Settings

FIRST = first_records([("a", "b", 1.0), ("b", "c", 1.0), ("c", "a", 2.0), ("a", "c", 3.0),
                       ("c", "d", 1.0)])
batches_st = st.lists(st.tuples(batch_st, st.booleans()),
                      min_size=1, max_size=3)
_SLOW = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small lake with one committed batch (FIRST)."""
    return template_lake(tmp_path_factory.mktemp("prov-vars"), FIRST)


def _committed_entries(lake: Settings) -> set[tuple[str, str, str]]:
    """(var, key1, key2) of the index as the last committed batch recorded it."""
    version = committed_versions(lake)[PROV_INDEX_TABLE]
    table = DeltaTable(lake.table_uri(PROV_INDEX_TABLE), version=version).to_pyarrow_table()
    rows = zip(table.column("var").to_pylist(), table.column("key1").to_pylist(),
               table.column("key2").to_pylist(), table.column("bucket").to_pylist(), strict=True)
    out = set()
    for var, one, two, bucket in rows:
        assert bucket == bucket_of(var)  # every entry sits in its variable's partition
        out.add((var, one, two))
    return out


def _exact_entries(lake: Settings) -> set[tuple[str, str, str]]:
    """(var, key1, key2) of every committed view row, read from its bytes."""
    out = set()
    for view in VIEWS:
        if not table_exists(lake, view):
            continue
        frame = read_committed(lake, view)
        table = entries_of(view, frame, 0)
        out |= set(zip(table.column("var").to_pylist(), table.column("key1").to_pylist(),
                       table.column("key2").to_pylist(), strict=True))
    return out


@given(batches=batches_st)
@hsettings(max_examples=8, deadline=None, suppress_health_check=_SLOW)
def test_the_kept_index_covers_the_rows_and_a_rebuild_lists_exactly_them(
        template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        batches: list) -> None:
    lake = copy_lake(template, tmp_path)
    assert _committed_entries(lake) == _exact_entries(lake)  # the first batch built it
    for number, (records, compact) in enumerate(batches):
        monkeypatch.setattr(batch_module, "should_compact", lambda *_, c=compact: c)
        before = committed_batch(lake)
        maintain_batch(lake, records, f"batch-{number}")
        kept, exact = _committed_entries(lake), _exact_entries(lake)
        assert exact <= kept  # no row a deletion can touch is missed
        if compact and committed_batch(lake) > before:  # a batch ran and rewrote the
            assert kept == exact  # snapshots: the index was rebuilt, stale entries gone
        # the stale entries name pairs whose current rows do not mention the variable
        for var, one, two in kept - exact:
            for view in VIEWS:
                if table_exists(lake, view):
                    frame = read_committed(lake, view)
                    rows = frame[(frame.iloc[:, 0].astype(str) == one)
                                 & (frame.iloc[:, 1].astype(str) == two)]
                    assert all(var not in names_of(p) for p in rows["provenance"]
                               if p is not None)
    rebuilt = copy_lake(Path(lake.lake), tmp_path)
    rebuild(rebuilt, 0)
    table = read_table(rebuilt, PROV_INDEX_TABLE)
    assert set(zip(table["var"], table["key1"], table["key2"], strict=True)) == \
        _exact_entries(rebuilt)


def _answers(reading: LakeProvenance, deleted: set[str]) -> dict[str, list]:
    return reading.what_if(deleted)


@given(batches=batches_st, data=st.data())
@hsettings(max_examples=6, deadline=None, suppress_health_check=_SLOW)
def test_answers_through_the_index_equal_answers_from_the_views_read_whole(
        template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batches: list,
        data: st.DataObject) -> None:
    lake = copy_lake(template, tmp_path)
    for number, (records, compact) in enumerate(batches):
        monkeypatch.setattr(batch_module, "should_compact", lambda *_, c=compact: c)
        maintain_batch(lake, records, f"batch-{number}")
    whole = LakeProvenance(lake)
    for view in VIEWS:
        if table_exists(lake, view):
            whole._rows(view)  # read whole: the answers of before the index
    live = sorted({var for _, var, _ in whole._live_rows()})
    if not live:
        return
    asked = [{var} for var in live] + [set(live)]
    asked.append(set(data.draw(st.lists(st.sampled_from(live), max_size=3))))
    fresh = LakeProvenance(lake)
    assert fresh._index_version() is not None
    for deleted in asked:
        assert fresh.what_if(deleted) == whole.what_if(deleted), deleted
    for view in VIEWS:  # nothing read whole: the index and the pairs' rows answered
        assert fresh._read_whole(view) is None
    for view in ("reachable", "cheapest_path", "active_region"):
        if not table_exists(lake, view):
            continue
        assert LakeProvenance(lake).count(view) == len(whole.tuples(view))
        assert count_with_formula(lake, view, whole._pin.versions) == len(whole.tuples(view))
        for key in sorted({tuple(map(str, t[:2])) for t in whole.tuples(view)})[:6]:
            ours = LakeProvenance(lake).explain(view, key)
            assert [e.as_dict() for e in ours] == \
                [e.as_dict() for e in whole.explain(view, key)]


def _forget_index(lake: Settings) -> None:
    """Make ``lake`` look as an older maintainer left it: no index, none in the ledger."""
    shutil.rmtree(Path(lake.lake) / PROV_INDEX_TABLE)
    ledger = read_table(lake, "ledger")
    ledger["table_versions"] = [
        json.dumps({k: v for k, v in json.loads(t).items() if k != PROV_INDEX_TABLE},
                   sort_keys=True)
        for t in ledger["table_versions"]]
    write_table(lake, "ledger", ledger)


def test_an_older_lake_without_the_index_answers_and_its_next_batch_builds_it(
        template: Path, tmp_path: Path) -> None:
    lake = copy_lake(template, tmp_path)
    expected = LakeProvenance(lake)
    live = sorted({var for _, var, _ in expected._live_rows()})
    answers = {var: expected.what_if({var}) for var in live}
    _forget_index(lake)
    older = LakeProvenance(lake)
    assert older._index_version() is None
    assert {var: older.what_if({var}) for var in live} == answers
    assert older._read_whole("reachable") is not None  # answered from the views read whole
    maintain_batch(lake, [{"op": "delete", "relation": "link", "src": "c", "dst": "d"}], "cut")
    assert index_version(lake, LakeProvenance(lake).batch) is not None
    assert _committed_entries(lake) == _exact_entries(lake)


@pytest.mark.parametrize("point", ["maintain:after-prov-index", "maintain:before-ledger"])
def test_a_batch_killed_after_the_index_reruns_to_the_same_index(
        template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    cut = [{"op": "delete", "relation": "link", "src": "a", "dst": "b"},
           {"op": "insert", "relation": "link", "src": "d", "dst": "a", "cost": 1.0}]
    clean, crashed = copy_lake(template, tmp_path), copy_lake(template, tmp_path)
    maintain_batch(clean, cut, "cut")
    path = Path(crashed.lake).parent / "cut.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in cut))
    ingest_files(crashed, [path])
    monkeypatch.setenv("ASPEN_CRASH_AT", point)
    with pytest.raises(InjectedCrash):
        maintain_local(crashed)
    monkeypatch.delenv("ASPEN_CRASH_AT")
    maintain_local(crashed)  # the rerun: the uncommitted append is restored first
    assert _committed_entries(crashed) == _committed_entries(clean)
    versions = committed_versions(crashed)
    assert pairs_of(crashed, versions[PROV_INDEX_TABLE], {"v1"}) == \
        pairs_of(clean, committed_versions(clean)[PROV_INDEX_TABLE], {"v1"})
