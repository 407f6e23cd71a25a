"""One decoding of a lake's provenance per lake version and server process: the warming thread
decodes each new version before anyone asks, and concurrent sessions share it safely.

The lake is ``provenance_lake`` (links a→b, b→c, a→c; ``reachable`` with provenance)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dashboard_apptest import commit_views
from test_dashboard_provenance_pages import provenance_lake  # noqa: F401  (fixture)

from aspen.lake.deltars import write_table
from aspen.pipeline import lake_provenance
from aspen.pipeline.lake_provenance import (
    LakeProvenance,
    in_foreground,
    keep_warm,
    provenance_versions,
    shared_provenance,
)
from aspen.pipeline.view_tables import view_frame
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings


def _new_batch(settings: Settings) -> None:
    """Commit a batch in which b→c no longer reaches anything but c (a new reachable version)."""
    manager = ProvenanceManager()
    v1, v2, v3 = (manager.var(v) for v in ("v1", "v2", "v3"))
    formulas = {("a", "b"): v1, ("b", "c"): v2, ("a", "c"): v3}
    write_table(settings, "reachable", view_frame("reachable", formulas, manager, batch_id=2))
    commit_views(settings.lake)


def test_the_warming_thread_decodes_each_new_version(provenance_lake: Path) -> None:  # noqa: F811
    settings = Settings(lake=str(provenance_lake))
    warmed: list[tuple] = []
    stop = threading.Event()
    done = threading.Event()

    def record(versions: tuple, _seconds: float) -> None:
        warmed.append(versions)
        done.set()

    thread = threading.Thread(target=keep_warm, args=(settings, 0.05, stop, record), daemon=True)
    thread.start()
    try:
        assert done.wait(60)
        first = provenance_versions(settings)
        assert warmed == [first]
        assert shared_provenance(settings.lake, first).warm_seconds is not None
        done.clear()
        _new_batch(settings)
        assert done.wait(60)
        second = provenance_versions(settings)
        assert second != first and warmed == [first, second]
        answer = shared_provenance(settings.lake, second).what_if({"v2"})
        assert answer["reachable"] == [("b", "c")]  # (a, c) no longer needs b→c
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


def test_concurrent_sessions_share_one_decoding(provenance_lake: Path) -> None:  # noqa: F811
    settings = Settings(lake=str(provenance_lake))
    versions = provenance_versions(settings)

    def ask(deleted: frozenset[str]) -> tuple[int, dict]:
        provenance = shared_provenance(settings.lake, versions)
        return id(provenance), provenance.what_if(set(deleted))

    questions = [frozenset({"v1"}), frozenset({"v2"}), frozenset({"v1", "v3"})] * 8
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(ask, questions))
    assert len({identity for identity, _ in answers}) == 1
    expected = {
        frozenset({"v1"}): [("a", "b")],
        frozenset({"v2"}): [("b", "c")],
        frozenset({"v1", "v3"}): [("a", "b"), ("a", "c")],
    }
    for question, (_, lost) in zip(questions, answers, strict=True):
        assert lost["reachable"] == expected[question]


def test_the_warm_up_waits_while_a_page_draws(provenance_lake: Path) -> None:  # noqa: F811
    """No row is decoded by the warm-up while a reader works; it decodes every row after."""
    reading = LakeProvenance(Settings(lake=str(provenance_lake)))
    warm = threading.Thread(target=reading.warm, daemon=True)
    with in_foreground():
        warm.start()
        warm.join(1.0)  # long enough to read and index the view, were it not waiting
        assert warm.is_alive()
        assert reading.decoded_count("reachable") == 0
    warm.join(60)
    assert not warm.is_alive()
    assert reading.decoded_count("reachable") == 3
    assert reading.what_if({"v1"})["reachable"] == [("a", "b")]


def test_the_warm_up_reads_every_view_before_decoding_any(
    provenance_lake: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """Reading and indexing (what every question needs) come before the long decoding."""
    reading = LakeProvenance(Settings(lake=str(provenance_lake)))
    seen: list[set[str]] = []
    decode_all = LakeProvenance._decode_all

    def record(self: LakeProvenance, rows: object, pause: object = None) -> None:
        seen.append(set(self._views))
        decode_all(self, rows, pause)

    monkeypatch.setattr(LakeProvenance, "_decode_all", record)
    reading.warm()
    assert seen and seen[0] == {"reachable"}  # the lake's only view, read before decoding
    assert reading._rows("reachable")._names is not None  # and indexed
    assert lake_provenance.FOREGROUND_GRACE_S < 1
