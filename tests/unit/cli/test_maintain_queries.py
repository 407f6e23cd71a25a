"""``aspen maintain`` runs the registered queries after each committed batch (not after an
empty one, not with ``--no-queries``), and a failure there leaves the batch committed."""

from __future__ import annotations

import argparse

import pytest

import aspen.queries.runner
from aspen.cli import maintain
from aspen.errors import LakeError
from aspen.pipeline.batch import MaintainReport
from aspen.settings import Settings


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []

    def after(settings: Settings, batch_id: int) -> list[str]:
        calls.append(batch_id)
        if batch_id == 13:
            raise LakeError("the registry is unreadable")
        return [f"  query q: 3 rows into q_q in 0.10 s (batch {batch_id})"]

    monkeypatch.setattr(aspen.queries.runner, "run_after_batch", after)
    return calls


def _runner(monkeypatch, report: MaintainReport, queries: bool = True):
    monkeypatch.setattr(maintain, "_runtime_batch", lambda args, settings: lambda: report)
    args = argparse.Namespace(queries=queries, runtime="local", follow=False, hosts=None)
    return maintain._batch_runner(args, Settings(lake="unused"))


def test_queries_run_after_a_committed_batch(monkeypatch, ran) -> None:
    report = _runner(monkeypatch, MaintainReport(7, 3))()
    assert ran == [7]
    assert report.lines()[-1] == "  query q: 3 rows into q_q in 0.10 s (batch 7)"


def test_not_after_an_empty_batch_nor_with_no_queries(monkeypatch, ran) -> None:
    _runner(monkeypatch, MaintainReport(7, 3, nothing_to_do=True))()
    _runner(monkeypatch, MaintainReport(8, 4), queries=False)()
    assert ran == []


def test_a_failure_of_the_queries_is_reported_not_raised(monkeypatch, ran) -> None:
    report = _runner(monkeypatch, MaintainReport(13, 5))()
    assert report.notes == ["  continuous queries not run: the registry is unreadable"]
