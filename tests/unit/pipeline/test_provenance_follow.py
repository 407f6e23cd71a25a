"""Decoding that follows the batches: the name index read from the stored bytes, questions that
decode only their candidate rows, a reading advanced batch by batch against a fresh one, and a
question answered while the warm-up holds the remaining views undecoded.

The lakes are built in process (ingest, then ``maintain_local``: no Spark), on a few nodes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from small_lakes import batch_st, copy_lake, first_records, maintain_batch, template_lake

from aspen.catalog import VIEWS
from aspen.errors import UnknownKeyError
from aspen.pipeline import batch as batch_module
from aspen.pipeline import lake_provenance
from aspen.pipeline.lake_provenance import (
    LakeProvenance,
    provenance_versions,
    shared_provenance,
)
from aspen.pipeline.provenance_index import DROPPED, ViewRows, net_changes
from aspen.provenance.bdd import ProvenanceManager
from aspen.provenance.codec import name_occurrences, read_names
from aspen.provenance.explain import build_var_index, what_if

VARS = [f"v{i}" for i in range(6)]


# -- the name index, without a lake ------------------------------------------------------------
def _formula(m: ProvenanceManager, terms: list[list[str]]):
    """A monotone formula: an OR of ANDs of variables."""
    return m.disj(m.conj(m.var(v) for v in term) for term in terms)


formulas_st = st.dictionaries(
    st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd")),
    st.lists(st.lists(st.sampled_from(VARS), min_size=0, max_size=3), max_size=3),
    max_size=10,
)


@given(formulas_st, st.sets(st.sampled_from(VARS), max_size=3))
@hsettings(max_examples=60, deadline=None)
def test_the_name_index_is_the_support_index_and_candidates_lose_what_a_full_decode_loses(
        terms: dict, deleted: set[str]) -> None:
    m = ProvenanceManager()
    full = {key: _formula(m, t) for key, t in terms.items()}
    rows = ViewRows("reachable", {key: m.encode(f) for key, f in full.items()})
    assert rows.names() == build_var_index(m, full)
    expected = what_if(m, full, deleted)
    # candidate-only decoding, into a manager of its own
    other = ProvenanceManager()
    candidates = rows.candidates(deleted)
    decoded = {key: other.decode(rows.data[key]) for key in candidates}
    assert what_if(other, decoded, deleted) == expected
    assert candidates <= set(full)


@given(st.lists(st.lists(st.sampled_from(VARS + ["sensor-🌡", "x" * 200]), max_size=4,
                         unique=True), max_size=8))
@hsettings(max_examples=40, deadline=None)
def test_names_read_at_once_equal_names_read_one_by_one(terms: list[list[str]]) -> None:
    m = ProvenanceManager()
    encodings = [m.encode(m.conj(m.var(v) for v in term)) for term in terms]
    rows, ids, names = name_occurrences(encodings)
    at_once = sorted((int(r), names[i]) for r, i in zip(rows, ids, strict=True))
    one_by_one = sorted((r, n) for r, data in enumerate(encodings) for n in read_names(data, 1)[0])
    assert at_once == one_by_one


@given(formulas_st, formulas_st, st.sets(st.tuples(st.sampled_from("abcd"),
                                                    st.sampled_from("abcd"))))
@hsettings(max_examples=60, deadline=None)
def test_changes_applied_to_a_copy_equal_the_rows_read_afresh(before: dict, upserts: dict,
                                                              drops: set) -> None:
    m = ProvenanceManager()
    old = ViewRows("reachable", {k: m.encode(_formula(m, t)) for k, t in before.items()})
    old.names()
    old.decoded = {k: m.decode(d) for k, d in old.data.items()}
    old_index = {name: set(keys) for name, keys in old.names().items()}
    changes: dict = {k: DROPPED for k in drops}
    changes.update({k: m.encode(_formula(m, t)) for k, t in upserts.items()})
    new = old.with_changes(changes)
    expected = {k: d for k, d in old.data.items() if k not in changes}
    expected.update({k: d for k, d in changes.items() if d is not DROPPED})
    assert new.data == expected
    assert new.names() == ViewRows("reachable", dict(expected)).names()
    assert set(new.decoded) == set(old.data) - set(changes)  # unchanged rows stay decoded
    assert old.names() == old_index  # the old rows are untouched


def test_the_last_change_of_a_key_wins_in_batch_order() -> None:
    import pandas as pd

    log = pd.DataFrame({"view": ["reachable"] * 4, "batch_id": [2, 2, 3, 4],
                        "change": ["upsert", "delete", "upsert", "delete"],
                        "src": ["a", "a", "b", "a"], "dst": ["b", "b", "c", "c"],
                        "provenance": [b"\xa5x", None, b"\xa5y", None]})
    assert net_changes("reachable", log) == {("a", "b"): b"\xa5x", ("b", "c"): b"\xa5y",
                                             ("a", "c"): DROPPED}


# -- lakes -------------------------------------------------------------------------------------
FIRST = first_records([("a", "b", 1.0), ("b", "c", 1.0), ("c", "a", 2.0), ("a", "c", 3.0)])
batches_st = st.lists(batch_st,
                      min_size=1, max_size=3)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small lake with one committed batch (FIRST)."""
    return template_lake(tmp_path_factory.mktemp("follow"), FIRST)


def _same_answers(later: LakeProvenance, fresh: LakeProvenance) -> None:
    """Equal tuples, equivalent formulas, and equal what-if answers for every live variable
    alone and for all of them."""
    check = ProvenanceManager()
    for view in VIEWS:
        assert sorted(later.tuples(view), key=repr) == sorted(fresh.tuples(view), key=repr)
        ours, theirs = later.formulas(view), fresh.formulas(view)
        assert set(ours) == set(theirs)
        for key in ours:  # the same function, compared in a third manager
            assert (check.decode(later.manager.encode(ours[key]))
                    == check.decode(fresh.manager.encode(theirs[key]))), (view, key)
    live = sorted({var for _, var, _ in fresh._live_rows()})
    assert live == sorted({var for _, var, _ in later._live_rows()})
    for deleted in [{var} for var in live] + [set(live)]:
        assert later.what_if(deleted) == fresh.what_if(deleted)
    for var in live:
        assert later.describe(var) == fresh.describe(var)


@given(batches=batches_st, warm_first=st.booleans(), data=st.data())
@hsettings(max_examples=6, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_advancing_batch_by_batch_equals_a_fresh_decode(template: Path, tmp_path: Path,
                                                        batches: list, warm_first: bool,
                                                        data: st.DataObject) -> None:
    lake = copy_lake(template, tmp_path)
    reading = LakeProvenance(lake)
    if warm_first:
        reading.warm()
    else:  # a few questions: some rows decoded, some views not read at all
        reading.what_if({data.draw(st.sampled_from(sorted(v for _, v, _ in
                                                          reading._live_rows())))})
    for number, records in enumerate(batches):
        maintain_batch(lake, records, f"batch-{number}")
        later = reading.advance()
        assert later.followed is not None  # followed the log: no compaction on this lake
        assert later.manager is reading.manager and later.batch >= reading.batch
        _same_answers(later, LakeProvenance(lake))
        reading = later


def test_a_compaction_in_between_decodes_afresh(template: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    lake = copy_lake(template, tmp_path)
    reading = LakeProvenance(lake)
    reading.warm()
    monkeypatch.setattr(batch_module, "should_compact", lambda *_: True)
    maintain_batch(lake, [{"op": "delete", "relation": "link", "src": "a", "dst": "b"}], "cut")
    later = reading.advance()
    assert later.followed is None and later.manager is not reading.manager
    _same_answers(later, LakeProvenance(lake))


def test_after_a_batch_the_shared_reading_decodes_only_what_changed(
        template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = copy_lake(template, tmp_path)
    first = shared_provenance(lake.lake, provenance_versions(lake))
    first.warm()
    decoded: list[int] = []
    original = LakeProvenance._decode

    def counting(self, rows, keys, order=True):
        done = original(self, rows, keys, order)
        decoded.append(done)
        return done

    monkeypatch.setattr(LakeProvenance, "_decode", counting)
    maintain_batch(lake, [{"op": "delete", "relation": "link", "src": "b", "dst": "c"}], "cut")
    second = shared_provenance(lake.lake, provenance_versions(lake))
    assert second is not first and second.followed is not None
    assert second.followed.rows > 0
    assert second.followed.registry_files >= 1  # the registry file the deletion rewrote
    assert second.live_vars_of("link", ("a", "b")) and second.describe("v2") == "link(b→c)"
    with pytest.raises(UnknownKeyError, match="no live link b:c"):
        second.live_vars_of("link", ("b", "c"))
    second.warm()
    total = sum(len(second.tuples(view)) for view in VIEWS)
    assert 0 < sum(decoded) <= second.followed.rows < total
    _same_answers(second, LakeProvenance(lake))


def test_a_question_during_the_warm_up_does_not_wait_for_it(
        template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = copy_lake(template, tmp_path)
    expected = LakeProvenance(lake)
    reading = LakeProvenance(lake)
    paused, release = threading.Event(), threading.Event()
    original = LakeProvenance._decode_run

    def slowed(self, rows, keys):
        original(self, rows, keys)  # one run, under the lock
        paused.set()
        release.wait(120)  # then hold the rest of the warm-up back, outside the lock

    monkeypatch.setattr(LakeProvenance, "_decode_run", slowed)
    warming = threading.Thread(target=reading.warm, daemon=True)
    warming.start()
    try:
        assert paused.wait(120)
        deleted = reading.live_vars_of("link", ("b", "c"))
        answers: list[dict] = []
        asking = threading.Thread(target=lambda: answers.append(reading.what_if(deleted)),
                                  daemon=True)
        asking.start()
        asking.join(120)
        assert not asking.is_alive(), "the question waited for the warm-up"
        assert answers == [expected.what_if(deleted)]
        assert warming.is_alive() and reading.warm_seconds is None
        undecoded = [view for view in VIEWS
                     if reading.decoded_count(view) < len(reading.tuples(view))]
        assert undecoded  # the warm-up still holds views back
    finally:
        release.set()
        warming.join(120)
    assert reading.warm_seconds is not None
    assert all(reading.decoded_count(view) == len(reading.tuples(view)) for view in VIEWS)


def test_shared_readings_follow_the_lake(template: Path, tmp_path: Path) -> None:
    lake = copy_lake(template, tmp_path)
    first = shared_provenance(lake.lake, provenance_versions(lake))
    maintain_batch(lake, [{"op": "delete", "relation": "triggered", "id": "s2"}], "cut")
    second = shared_provenance(lake.lake, provenance_versions(lake))
    assert second.followed is not None and second.batch == first.batch + 1
    assert len(lake_provenance._shared) <= lake_provenance.SHARED_KEPT
    assert shared_provenance(lake.lake, provenance_versions(lake)) is second


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_truncated_names_are_refused_in_one_line(cut: int) -> None:
    from aspen.errors import ProvenanceError

    m = ProvenanceManager()
    data = m.encode(m.and_(m.var("alpha"), m.var("beta")))
    with pytest.raises(ProvenanceError, match="provenance bytes"):
        name_occurrences([data, data[: 1 + cut]])
    with pytest.raises(ProvenanceError, match="magic"):
        name_occurrences([data, b"\x00" + data[1:]])
