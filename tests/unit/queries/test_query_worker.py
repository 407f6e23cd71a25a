"""The query worker, in process with fake query runners (no Spark): rounds coalesce to the newest
batch; a failing and a hanging query are recorded (failed, timed out: one line each) while the
others run; a follower goes on committing batches while a round hangs, and stopping cancels it;
a one-shot ``aspen maintain`` runs its queries only after releasing the lease."""

from __future__ import annotations

import argparse
import threading
from functools import partial

import pytest

import aspen.pipeline.follow
from aspen.pipeline.batch import MaintainReport
from aspen.pipeline.follow import follow
from aspen.queries.execute import RunReport
from aspen.queries.registry import register
from aspen.queries.runner import run_round
from aspen.queries.status import FAILED, OK, TIMED_OUT, read_statuses
from aspen.queries.worker import QueryWorker, after_batches

SQL = "SELECT COUNT(*) AS n FROM link"
JVM_ERROR = ("An error occurred while calling o91.localCheckpoint.\n"
             ": org.apache.spark.SparkNumberFormatException: [CAST_INVALID_INPUT] The value 'n1' "
             "of the type \"STRING\" cannot be cast to \"INT\".\n"
             "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.invalidInputInCastToNumber"
             "\n\tat org.apache.spark.sql.catalyst.expressions.Cast.castToInt\n")


class FakeQueries:
    """Runs queries by name: ``bad`` raises a Py4J-looking error, ``hangs`` waits until its job
    group is cancelled, every other returns a report at once."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.cancelled: list[str] = []
        self._cancel = threading.Event()

    def run_one(self, name: str, group: str) -> RunReport:
        if name == "bad":
            raise RuntimeError(JVM_ERROR)
        if name == "hangs":
            assert self._cancel.wait(30), "never cancelled"
            raise RuntimeError("An error occurred\n: org.apache.spark.SparkException: Job 3 "
                               "cancelled part of cancelled job group")
        self.ran.append(name)
        return RunReport(name, f"run-{name}", {}, 1.0, 5, 0.01, ())

    def cancel(self, group: str) -> None:
        self.cancelled.append(group)
        self._cancel.set()


def test_rounds_coalesce_to_the_newest_batch(lake) -> None:
    release, started = threading.Event(), threading.Event()
    rounds: list[int] = []

    def one_round(batch_id: int) -> list[str]:
        rounds.append(batch_id)
        started.set()
        release.wait(10)
        return []

    worker = QueryWorker(lake, run_round=one_round, emit=lambda line: None).start()
    worker.submit(1)
    assert started.wait(10)
    for batch in (2, 3, 4):  # commit while the first round runs
        worker.submit(batch)
    release.set()
    assert worker.wait_idle(10)
    worker.stop()
    assert rounds == [1, 4]
    assert worker.rounds == 2


def test_a_failing_and_a_hanging_query_are_recorded_the_others_run(lake) -> None:
    for name in ("a_first", "bad", "hangs", "z_last"):
        register(lake, name, SQL)
    fake = FakeQueries()
    lines: list[str] = []
    worker = QueryWorker(lake, run_round=partial(run_round, lake, spark=lambda: None,
                                                 time_limit=0.5, run_one=fake.run_one,
                                                 cancel=fake.cancel),
                         emit=lines.append).start()
    worker.submit(6)
    assert worker.wait_idle(30)
    worker.stop()
    assert fake.ran == ["a_first", "z_last"]
    assert fake.cancelled and all(g.startswith("aspen-query-hangs-") for g in fake.cancelled)
    status = read_statuses(lake)
    assert {name: s.status for name, s in status.items()} == {
        "a_first": OK, "bad": FAILED, "hangs": TIMED_OUT, "z_last": OK}
    assert status["bad"].reason == (
        "RuntimeError: org.apache.spark.SparkNumberFormatException: [CAST_INVALID_INPUT] The "
        "value 'n1' of the type \"STRING\" cannot be cast to \"INT\".")
    assert status["hangs"].reason.startswith("cancelled after 0.5 s (the time limit")
    assert all(s.batch_id == 6 for s in status.values())
    assert lines[0] == "continuous queries after batch 6:"
    assert "  query bad: failed: RuntimeError: org.apache.spark" in lines[2]
    assert all("\tat " not in line for line in lines)


def test_a_round_that_raises_does_not_end_the_worker(lake) -> None:
    calls: list[int] = []

    def one_round(batch_id: int) -> list[str]:
        calls.append(batch_id)
        if batch_id == 1:
            raise OSError("the lake is unreachable")
        return ["  query q: 1 rows"]

    lines: list[str] = []
    worker = QueryWorker(lake, run_round=one_round, emit=lines.append).start()
    worker.submit(1)
    assert worker.wait_idle(10)
    worker.submit(2)
    assert worker.wait_idle(10)
    worker.stop()
    assert calls == [1, 2]
    assert "  not run: OSError: the lake is unreachable" in lines


def test_the_follower_goes_on_while_a_round_hangs_and_stop_cancels_it(lake, monkeypatch) -> None:
    looks = iter(range(10_000))
    monkeypatch.setattr(aspen.pipeline.follow, "log_versions", lambda settings: (next(looks),))
    entered, cancelled = threading.Event(), threading.Event()

    def hanging_round(batch_id: int) -> list[str]:
        entered.set()
        cancelled.wait(30)
        return ["  query slow: timed out"]

    worker = QueryWorker(lake, run_round=hanging_round, cancel=cancelled.set,
                         emit=lambda line: None).start()
    batches = iter(range(1, 100))

    def one_batch() -> MaintainReport:
        batch = next(batches)
        if batch == 2:  # the worker has taken batch 1's round
            assert entered.wait(10)
        return MaintainReport(batch, 1)

    run_batch = after_batches(one_batch, worker)
    report = follow(lake, run_batch, poll=0.01, max_batches=5, emit=lambda line: None)
    assert report.batches == 5  # committed while the first round hangs
    assert entered.is_set() and not cancelled.is_set()
    lines = worker.stop(grace=0.05, cancel_wait=10)
    assert cancelled.is_set()
    assert lines == ["continuous queries: the round after batch 5 was not run (stopping)",
                     "continuous queries: the round after batch 1 cancelled (stopping)"]


def test_one_shot_maintain_runs_the_queries_after_releasing_the_lease(lake, monkeypatch,
                                                                       capsys) -> None:
    import aspen.queries.worker
    from aspen.cli import maintain
    from aspen.lake.lease import current_holder
    from aspen.pipeline import maintainer

    held_during_round: list[bool] = []

    class Worker(QueryWorker):
        def __init__(self, settings, **kwargs) -> None:
            def one_round(batch_id: int) -> list[str]:
                holder = current_holder(settings)
                held_during_round.append(holder is not None and not holder.released)
                return [f"  query q: ran after batch {batch_id}"]

            super().__init__(settings, run_round=one_round, emit=kwargs["emit"])

    monkeypatch.setattr(aspen.queries.worker, "QueryWorker", Worker)
    monkeypatch.setattr(maintainer, "runtime_batch", lambda options, settings: lambda: (
        MaintainReport(7, 3)))
    parser = argparse.ArgumentParser()
    maintain.register(parser.add_subparsers())
    args = parser.parse_args(["maintain"])
    assert maintain.run(args, lake) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("batch 7:")
    assert out[-2:] == ["continuous queries after batch 7:", "  query q: ran after batch 7"]
    assert held_during_round == [False]


@pytest.mark.parametrize("flag, handed", [((), [7]), (("--no-queries",), [])])
def test_no_queries_hands_nothing(lake, monkeypatch, flag, handed) -> None:
    import aspen.queries.worker
    from aspen.cli import maintain
    from aspen.pipeline import maintainer

    submitted: list[int] = []
    monkeypatch.setattr(aspen.queries.worker.QueryWorker, "submit",
                        lambda self, batch_id: submitted.append(batch_id))
    monkeypatch.setattr(maintainer, "runtime_batch", lambda options, settings: lambda: (
        MaintainReport(7, 3)))
    parser = argparse.ArgumentParser()
    maintain.register(parser.add_subparsers())
    assert maintain.run(parser.parse_args(["maintain", *flag]), lake) == 0
    assert submitted == handed


def test_a_stopped_round_starts_no_further_query(lake) -> None:
    from aspen.queries.runner import run_registered

    for name in ("first", "second", "third"):
        register(lake, name, SQL)
    fake = FakeQueries()
    outcomes = run_registered(None, lake, 2, run_one=fake.run_one, cancel=fake.cancel,
                              should_stop=lambda: bool(fake.ran))
    assert [o.name for o in outcomes] == ["first"] and fake.ran == ["first"]
    assert set(read_statuses(lake)) == {"first"}


def test_a_bad_time_limit_is_refused_before_the_batch(lake, monkeypatch, capsys) -> None:
    from aspen.cli.main import main

    monkeypatch.setenv("ASPEN_QUERY_TIME_LIMIT", "soon")
    try:
        code = main(["--lake", lake.lake, "maintain"])
    except SystemExit as exit_info:
        code = int(exit_info.code or 0)
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "ASPEN_QUERY_TIME_LIMIT must be a number of seconds, got 'soon'" in err
    assert len(err.splitlines()) == 1
