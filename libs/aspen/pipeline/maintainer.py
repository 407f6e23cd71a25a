"""The maintainer: the lake's maintainer lease, then maintained batches, then the continuous
queries — what ``aspen maintain``, ``jobs/maintain.py`` and the supervised follower run.

Three things, each taking :class:`~aspen.settings.Settings` and :class:`MaintainOptions`:

- :func:`maintain_once`: one batch under the lease (or, with ``rebuild``, one batch rebuilding
  every view); the lease released, each committed batch's queries run in the query worker
  (:mod:`aspen.queries.worker`), off the lease;
- :func:`run_follower`: a follower (:func:`aspen.pipeline.follow.follow`) under the lease, with
  its chores (TTL sweep, housekeeping) and its query worker, until a limit, the lake's stop
  request or the caller's ``stop`` event (a process sets it on SIGTERM);
- :func:`ask_follower_to_stop`: the stop request written into the lease row, then a wait
  until the holder is gone.

Every line goes to an ``emit`` callback; an error is an :class:`~aspen.errors.AspenError`.
Signal handling stays with the process (the CLI, :mod:`aspen.pipeline.maintainer_main`).

>>> MaintainOptions(runtime="spark", follow=True, inbox="/in").lease_command()
'aspen maintain --runtime spark --follow --inbox /in'
>>> MaintainOptions(hosts=2).check()
Traceback (most recent call last):
...
aspen.errors.ConfigError: --hosts applies to --runtime spark only
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from aspen.errors import ConfigError
from aspen.pipeline.batch import MaintainReport
from aspen.settings import MAX_PARTITIONS, Settings

if TYPE_CHECKING:
    from aspen.lake.lease import LeaseHolder
    from aspen.pipeline.follow import FollowReport
    from aspen.queries.worker import QueryWorker

__all__ = ["DEFAULT_POLL_SECONDS", "STOP_POLL_SECONDS", "Emit", "MaintainOptions",
           "ask_follower_to_stop", "batch_runner", "maintain_once", "run_follower",
           "runtime_batch"]

#: Seconds between a follower's looks at the update log.
DEFAULT_POLL_SECONDS = 1.0
#: Seconds between :func:`ask_follower_to_stop`'s looks at whether the follower has stopped.
STOP_POLL_SECONDS = 0.5

Emit = Callable[[str], None]

#: The options only a follower takes, by the flag that sets them.
_FOLLOWER_FLAGS = (("--poll", "poll"), ("--inbox", "inbox"), ("--max-batches", "max_batches"),
                   ("--for", "duration"), ("--expire-every", "expire_every"),
                   ("--housekeep-every", "housekeep_every"))


@dataclass(frozen=True)
class MaintainOptions:
    """How to maintain: the runtime (``local`` or ``spark``) and its Spark ``hosts``; whether
    committed batches go to the query worker; one ``rebuild`` batch, or a ``follow``\\ er with
    its poll interval, inbox, limits (``max_batches``, ``duration`` seconds) and chores' cadence
    (seconds; 0 never). ``None`` is the default of each."""

    runtime: str = "local"
    hosts: int | None = None
    queries: bool = True
    rebuild: bool = False
    follow: bool = False
    poll: float | None = None
    inbox: str | None = None
    max_batches: int | None = None
    duration: float | None = None
    expire_every: float | None = None
    housekeep_every: float | None = None

    def check(self) -> None:
        """Refuse a combination that cannot run, in one line naming its flags.

        >>> MaintainOptions(poll=2.0).check()
        Traceback (most recent call last):
        ...
        aspen.errors.ConfigError: --poll: only with --follow
        """
        if self.runtime not in ("local", "spark"):
            raise ConfigError(f"--runtime must be local or spark, got {self.runtime!r}")
        if self.hosts is not None and self.runtime != "spark":
            raise ConfigError("--hosts applies to --runtime spark only")
        if self.hosts is not None and not 1 <= self.hosts <= MAX_PARTITIONS:  # before Spark
            bound = "at least 1" if self.hosts < 1 else f"at most {MAX_PARTITIONS}"
            raise ConfigError(f"--hosts must be {bound}, got {self.hosts}")
        given = [flag for flag, name in _FOLLOWER_FLAGS if getattr(self, name) is not None]
        if given and not self.follow:
            raise ConfigError(f"{', '.join(given)}: only with --follow")
        for flag, value in (("--expire-every", self.expire_every),
                            ("--housekeep-every", self.housekeep_every)):
            if value is not None and value < 0:
                raise ConfigError(f"{flag} must not be negative, got {value:g}")
        if self.rebuild and self.follow:
            raise ConfigError("--rebuild runs one batch: not with --follow or --stop")

    def lease_command(self) -> str:
        """The command the lease row names (the inbox last: a reader of the lease takes the
        inbox a follower watches from its end, :func:`aspen.pipeline.supervise.watched_inbox`)."""
        if self.rebuild:
            return f"aspen maintain --runtime {self.runtime} --rebuild"
        command = f"aspen maintain --runtime {self.runtime}" + (" --follow" if self.follow
                                                                 else "")
        return command + (f" --inbox {self.inbox}" if self.inbox is not None else "")


def runtime_batch(options: MaintainOptions, settings: Settings) -> Callable[[], MaintainReport]:
    """One maintained batch of the chosen runtime, as a function of nothing (a follower on
    Spark starts its application here, before it looks at the log)."""
    if options.runtime == "spark":
        from aspen.pipeline.maintain_spark import maintain_spark

        if options.follow:
            from aspen.spark.session import get_spark

            get_spark("aspen-maintain")
        return lambda: maintain_spark(settings, hosts=options.hosts, rebuild=options.rebuild)
    from aspen.pipeline.maintain_local import maintain_local

    return lambda: maintain_local(settings, rebuild=options.rebuild)


def batch_runner(options: MaintainOptions, settings: Settings,
                 worker: QueryWorker | None = None) -> Callable[[], MaintainReport]:
    """:func:`runtime_batch`; with a query worker, each committed batch is handed to it (the
    queries run in its thread).

    >>> batch_runner(MaintainOptions(), Settings(lake="/tmp/unused")) is not None
    True
    """
    run_batch = runtime_batch(options, settings)
    if worker is None:
        return run_batch
    from aspen.queries.worker import after_batches

    return after_batches(run_batch, worker)


def _with_inbox(options: MaintainOptions) -> MaintainOptions:
    """``options`` with the inbox as its real path (refused in one line if it could escape)."""
    if options.inbox is None:
        return options
    from aspen.pipeline.inbox import inbox_folder

    return replace(options, inbox=str(inbox_folder(str(options.inbox))))


def _worker(settings: Settings, options: MaintainOptions, emit: Emit) -> QueryWorker | None:
    if not options.queries or options.rebuild:  # a rebuild runs no queries
        return None
    from aspen.queries import worker

    return worker.QueryWorker(settings, emit=emit)


def maintain_once(settings: Settings, options: MaintainOptions,
                  emit: Emit = print) -> MaintainReport:
    """One maintained batch under the maintainer lease (a ``rebuild`` one with
    ``options.rebuild``); its lines go to ``emit``, then, the lease released, the queries run
    after it (not after a rebuild, nor with ``options.queries`` off). The batch's report.

    Example, on a lake::

        maintain_once(Settings(lake="/srv/lake"), MaintainOptions(queries=False)).batch_id
        # 3
    """
    from aspen.lake.lease import MaintainerLease

    options.check()
    if options.follow:
        raise ConfigError("maintain_once runs one batch: not a follower (run_follower)")
    worker = _worker(settings, options, emit)
    with MaintainerLease(settings, options.lease_command()):
        report = batch_runner(options, settings, worker)()
        if options.rebuild:  # said under the lease, as the batch it is
            for line in report.lines():
                emit(line)
    if not options.rebuild:
        for line in report.lines():
            emit(line)
    if worker is not None:  # the lease is released: the queries run now, off it
        worker.finish()
    return report


def run_follower(settings: Settings, options: MaintainOptions, *, stop: threading.Event,
                 emit: Emit = print) -> FollowReport:
    """A follower under the maintainer lease: a batch whenever updates arrive (ingesting the
    inbox first, with one), its chores between batches, each committed batch handed to the
    query worker; until a limit of ``options``, the lake's stop request (``aspen maintain
    --stop``) or ``stop`` is set. Its lines, the worker's and the summary go to ``emit``.

    Example, on a lake (a test's event; a process sets it on SIGTERM)::

        run_follower(settings, MaintainOptions(follow=True, max_batches=2),
                     stop=threading.Event()).batches
        # 2
    """
    from aspen.lake.housekeeping import retain_hours_from_env
    from aspen.lake.lease import MaintainerLease
    from aspen.pipeline.follow import (
        DEFAULT_EXPIRE_EVERY,
        DEFAULT_HOUSEKEEP_EVERY,
        follow,
        lake_chores,
    )

    options.check()
    if not options.follow:
        raise ConfigError("run_follower needs a follower's options (follow=True)")
    options = _with_inbox(options)
    worker = _worker(settings, options, emit)
    with MaintainerLease(settings, options.lease_command(), follower=True) as lease:
        run_batch = batch_runner(options, settings, worker)
        keep_every = (DEFAULT_HOUSEKEEP_EVERY if options.housekeep_every is None
                      else options.housekeep_every)
        chores = lake_chores(
            settings, expire_every=(DEFAULT_EXPIRE_EVERY if options.expire_every is None
                                    else options.expire_every),
            housekeep_every=keep_every,
            retain_hours=retain_hours_from_env() if keep_every else None)
        if worker is not None:
            worker.start()
        try:
            report = follow(settings, run_batch,
                            poll=DEFAULT_POLL_SECONDS if options.poll is None else options.poll,
                            max_batches=options.max_batches, duration=options.duration,
                            stop=stop, stop_requested=lease.stop_requested, emit=emit,
                            chores=chores,
                            inbox=None if options.inbox is None else Path(options.inbox))
        finally:
            if worker is not None:  # a short grace for a running round, then its jobs cancelled
                for line in worker.stop():
                    emit(line)
    for line in report.lines():
        emit(line)
    return report


def ask_follower_to_stop(settings: Settings, emit: Emit = print, *,
                         poll: float = STOP_POLL_SECONDS) -> LeaseHolder | None:
    """Ask the lake's maintainer to stop after its current batch (a request in the lease row,
    so it reaches a follower anywhere), then wait until it no longer holds the lease; the
    holder asked, or ``None`` when none held it. Lines go to ``emit``.

    >>> ask_follower_to_stop(Settings(lake="/nonexistent/lake"), emit=print) is None
    no maintainer holds the lake's lease: nothing to stop
    True
    """
    from aspen.lake.lease import current_holder, request_stop

    holder = request_stop(settings)
    if holder is None:
        emit("no maintainer holds the lake's lease: nothing to stop")
        return None
    emit(f"asked {holder.describe()} to stop after its current batch")
    while True:
        row = current_holder(settings)
        if row is None or row.owner != holder.owner or not row.is_live(datetime.now(UTC)):
            emit("stopped")
            return holder
        time.sleep(poll)
