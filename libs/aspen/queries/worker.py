"""The query worker: the registered continuous queries run after maintained batches, in a thread
of their own, off the maintainer's lease and critical path.

A maintainer hands each committed batch to the worker (:func:`after_batches` wraps its batch
function) and goes on: polling, ingesting, committing. The worker runs one *round* — every
registered query, each under its time limit (:mod:`aspen.queries.guard`), failures recorded
(:mod:`aspen.queries.status`) — for the newest batch handed to it. Rounds coalesce: when several
batches commit while a round runs, the next round runs once, for the newest. On Spark the worker
has its own SparkSession (``newSession()`` of the maintainer's application: its own SQL conf
and temporary views, the same executors), and each query's jobs run in a job group of their
own, so the watchdog cancels exactly them. The worker thread runs at a lower CPU priority (nice
+10 on Linux; a JVM its first round starts inherits it), so queries yield the CPU to batches.

:meth:`QueryWorker.stop` gives a running round a grace period, then cancels its Spark jobs;
rounds not started are dropped (the next maintainer's first batch runs them again).
:meth:`QueryWorker.finish` instead waits for every handed batch's round (a one-shot
``aspen maintain``, after releasing its lease).

>>> lines = []
>>> worker = QueryWorker(Settings(lake="unused"), run_round=lambda b: [f"ran after {b}"],
...                      emit=lines.append).start()
>>> worker.submit(3)
>>> worker.finish()
>>> lines
['continuous queries after batch 3:', 'ran after 3']
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from aspen.pipeline.batch import MaintainReport
from aspen.queries.guard import CANCEL_EVERY_SECONDS, time_limit_from_env
from aspen.queries.status import one_line
from aspen.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CANCEL_WAIT_SECONDS", "NICE_INCREMENT", "STOP_GRACE_SECONDS", "QueryWorker",
           "SparkRounds", "after_batches"]

#: Seconds a stopping worker lets its running round go on before cancelling its Spark jobs.
STOP_GRACE_SECONDS = 5.0
#: How much lower the worker thread's CPU priority is than the maintainer's (nice, Linux).
NICE_INCREMENT = 10
#: Seconds it then waits for the cancelled round to end before leaving it behind.
CANCEL_WAIT_SECONDS = 5.0


class SparkRounds:
    """A round on Spark: :func:`aspen.queries.runner.run_round` on a session of its own
    (created at the first round that has a query), each query's jobs in a job group;
    :meth:`cancel` cancels the running query's group and leaves the round's other queries
    out."""

    def __init__(self, settings: Settings, time_limit: float | None) -> None:
        self.settings = settings
        self.time_limit = time_limit
        self._session: SparkSession | None = None
        self._group: str | None = None
        self._stopped = threading.Event()

    def _spark(self) -> SparkSession:
        if self._session is None:
            from aspen.spark.session import get_spark

            # the maintainer's application, a session of our own: the runs' SQL conf
            # (adaptive execution off) never reaches the maintainer's session
            self._session = get_spark("aspen-maintain").newSession()
        return self._session

    def __call__(self, batch_id: int) -> list[str]:
        from aspen.queries.registry import list_queries
        from aspen.queries.runner import run_round, spark_runner

        if not list_queries(self.settings):
            return []  # no Spark started for nothing
        spark = self._spark()
        run_one, cancel = spark_runner(spark, self.settings, batch_id, replan=False)

        def tracked(name: str, group: str):
            self._group = group
            try:
                return run_one(name, group)
            finally:
                self._group = None

        return run_round(self.settings, batch_id, lambda: spark, self.time_limit, tracked,
                         cancel, should_stop=self._stopped.is_set)

    def cancel(self) -> None:
        """Cancel the Spark jobs of the query running now, if any, and start no other."""
        self._stopped.set()
        group, session = self._group, self._session
        if group is not None and session is not None:
            session.sparkContext.cancelJobGroup(group)


class QueryWorker:
    """Runs ``run_round(batch_id)`` (default: :class:`SparkRounds` with the per-query limit
    ``time_limit()`` gives, ``ASPEN_QUERY_TIME_LIMIT``) for the newest batch handed to it, in a
    daemon thread; each round's lines go to ``emit`` after a header line; ``cancel`` is what
    :meth:`stop` calls to cancel a running round."""

    def __init__(self, settings: Settings, *,
                 run_round: Callable[[int], list[str]] | None = None,
                 cancel: Callable[[], None] | None = None,
                 emit: Callable[[str], None] = print,
                 time_limit: Callable[[], float | None] = time_limit_from_env) -> None:
        if run_round is None:
            rounds = SparkRounds(settings, time_limit())
            run_round, cancel = rounds, rounds.cancel
        self.settings = settings
        self._run_round = run_round
        self._cancel = cancel or (lambda: None)
        self._emit = emit
        self._cond = threading.Condition()
        self._pending: int | None = None
        self._busy: int | None = None
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.rounds = 0
        self.dropped: int | None = None

    def start(self) -> QueryWorker:
        """Start the thread (once); returns the worker."""
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="aspen-query-worker",
                                                daemon=True)
                self._thread.start()
        return self

    def submit(self, batch_id: int) -> None:
        """Hand the committed batch ``batch_id`` over; returns at once. A round not yet started
        for an older batch runs for this one instead."""
        with self._cond:
            self._pending = batch_id if self._pending is None else max(self._pending, batch_id)
            self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every handed batch's round ran; whether it did within ``timeout``."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and self._busy is None,
                                       timeout)

    def finish(self) -> None:
        """Run the rounds handed over, then stop the thread (what a one-shot maintain does)."""
        self.start()
        self.wait_idle()
        self.stop(grace=0.0)

    def stop(self, grace: float = STOP_GRACE_SECONDS,
             cancel_wait: float = CANCEL_WAIT_SECONDS) -> list[str]:
        """Stop: rounds not started are dropped, a running one gets ``grace`` seconds, then its
        Spark jobs are cancelled and it gets ``cancel_wait`` more; lines saying what happened."""
        with self._cond:
            self._stopping = True
            self.dropped, self._pending = self._pending, None
            self._cond.notify_all()
            thread, busy = self._thread, self._busy
        lines = []
        if self.dropped is not None:
            lines.append(f"continuous queries: the round after batch {self.dropped} was not "
                         "run (stopping)")
        if thread is None:
            return lines
        thread.join(grace)
        if thread.is_alive():
            deadline = time.monotonic() + cancel_wait
            failed: str | None = None
            while thread.is_alive() and time.monotonic() < deadline:
                try:  # again until it ends: a cancel reaches only the jobs running then
                    self._cancel()
                except Exception as err:  # noqa: BLE001 - stopping goes on whatever Spark says
                    failed = failed or one_line(err)
                thread.join(min(CANCEL_EVERY_SECONDS, max(0.0, deadline - time.monotonic())))
            if failed is not None:
                lines.append(f"continuous queries: could not cancel: {failed}")
            state = "still running, left behind" if thread.is_alive() else "cancelled"
            lines.append(f"continuous queries: the round after batch {busy} {state} (stopping)")
        return lines

    def _loop(self) -> None:
        _yield_cpu()
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._stopping)
                if self._pending is None:  # stopping, nothing handed over
                    return
                batch, self._pending, self._busy = self._pending, None, self._pending
            try:
                lines = self._run_round(batch)
            except Exception as err:  # noqa: BLE001 - a round never ends the worker
                lines = [f"  not run: {one_line(err)}"]
            if lines:
                self._emit(f"continuous queries after batch {batch}:")
                for line in lines:
                    self._emit(line)
            with self._cond:
                self._busy = None
                self.rounds += 1
                self._cond.notify_all()


def _yield_cpu() -> None:
    """Lower the calling thread's CPU priority by :data:`NICE_INCREMENT` (Linux: a thread has a
    nice value of its own, and a process it starts — the JVM of the worker's first round —
    inherits it), so the queries yield the CPU to the maintainer's batches; elsewhere nothing."""
    import os

    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread,
                       min(19, os.getpriority(os.PRIO_PROCESS, thread) + NICE_INCREMENT))
    except (AttributeError, OSError):  # no per-thread priorities here: run as we are
        pass


def after_batches(run_batch: Callable[[], MaintainReport],
                  worker: QueryWorker) -> Callable[[], MaintainReport]:
    """``run_batch`` that hands each committed batch to ``worker`` and returns at once (an
    empty batch is not handed over).

    >>> handed = []
    >>> class Fake:
    ...     submit = staticmethod(handed.append)
    >>> run = after_batches(lambda: MaintainReport(4, 2), Fake())
    >>> run().batch_id, handed
    (4, [4])
    """
    def batch_then_queries() -> MaintainReport:
        report = run_batch()
        if not report.nothing_to_do:
            worker.submit(report.batch_id)
        return report

    return batch_then_queries
