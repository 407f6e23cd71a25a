"""The maintainer (``aspen maintain``, :mod:`aspen.pipeline.maintainer`) hands each committed
batch to the query worker (not an empty one, not with ``--no-queries``) and returns at once: the
batch's report never waits for the queries, and nothing the queries do can fail it."""

from __future__ import annotations

import pytest

from aspen.pipeline import maintainer
from aspen.pipeline.batch import MaintainReport
from aspen.settings import Settings


class Worker:
    """Records what it is handed; a real worker would run the queries in its thread."""

    def __init__(self) -> None:
        self.handed: list[int] = []

    def submit(self, batch_id: int) -> None:
        self.handed.append(batch_id)


def _runner(monkeypatch, report: MaintainReport, worker: Worker | None):
    monkeypatch.setattr(maintainer, "runtime_batch", lambda options, settings: lambda: report)
    options = maintainer.MaintainOptions(queries=worker is not None)
    return maintainer.batch_runner(options, Settings(lake="unused"), worker)  # type: ignore[arg-type]


def test_a_committed_batch_is_handed_to_the_worker(monkeypatch) -> None:
    worker = Worker()
    report = _runner(monkeypatch, MaintainReport(7, 3), worker)()
    assert worker.handed == [7]
    assert report.notes == []  # the queries' lines come from the worker, later


@pytest.mark.parametrize("report", [MaintainReport(7, 3, nothing_to_do=True)])
def test_not_an_empty_batch(monkeypatch, report) -> None:
    worker = Worker()
    _runner(monkeypatch, report, worker)()
    assert worker.handed == []


def test_without_a_worker_the_batch_runs_alone(monkeypatch) -> None:
    report = MaintainReport(8, 4)
    assert _runner(monkeypatch, report, None)() is report
