"""The lake's leases: one writer at a time, per kind of writer.

Two writers of one lake that read the same committed state would hand out the same numbers and
overwrite each other: two ingests the same batch id and sequence numbers, two maintainers the
same maintained batch (each restoring the other's tables as "uncommitted"). Delta on a local file
system gives Spark writers no protection, so every writer holds a lease first:

- the **maintainer lease** (table ``maintainer_lease``): every writer of the base tables, the
  registry and the views — ``aspen maintain`` for its run, a follower for its life, a standalone
  apply, the TTL sweep and housekeeping. A second one is refused at once, naming the holder;
- the **log writer lease** (table ``log_writer_lease``): every appender of the update log
  (``ingest_files`` and the batch numbers it hands out) — ingest and the TTL sweep, for one call
  each. A second one *waits* for it (a poll with backoff, up to ``wait`` seconds), then reads the
  committed state afresh; so a follower holding the maintainer lease never blocks an ingest.

A writer that needs both takes the maintainer lease first (no one takes them the other way
round, so none waits for the other forever).

A lease is the one row of its Delta table under the lake root: who holds it (``owner``,
``host``, ``pid``, ``command``, whether a ``follower``), since when, until when (``expires_at``),
whether it was ``released`` and whether ``aspen maintain --stop`` asked its holder to stop
(``stop_requested``). It is taken and renewed by **compare-and-swap on the table's version**: a
writer reads the row at version *v* and overwrites it committing exactly version *v + 1*
(delta-rs with no commit retries), so of two writers that read the same version one commit
fails, re-reads and sees the other's claim. A holder renews its lease every ``ttl / 4``
seconds from a thread while it works; a lease not renewed for ``ttl`` seconds (its holder died,
or is stuck) may be taken, and so may at once a lease whose holder ran on this host and whose
process is gone (a job killed by ``kill -9``, rerun on the same machine).

The expiry compares clocks: across machines it assumes their clocks agree to well within
``ttl``. A holder that lost its lease (it was not renewed in time and someone took it) learns
it at its next renewal and at :meth:`Lease.check`, which a maintained batch calls just before
its ledger row and an ingest before each append: it then fails before committing, and the new
holder's next batch replaces what it wrote.

>>> from aspen.settings import Settings
>>> current_holder(Settings(lake="/nonexistent/lake")) is None
True
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, ClassVar

from aspen.errors import LakeError, LeaseBusyError
from aspen.settings import Settings
from aspen.spark.host_process import process_alive

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["LEASE_SECONDS", "LEASE_TABLE", "LOG_LEASE_SECONDS", "LOG_LEASE_TABLE",
           "LOG_WAIT_SECONDS", "Lease", "LeaseHolder", "LeaseKind", "LogWriterLease",
           "LostLeaseError", "MaintainerLease", "check_held", "current_holder", "live_follower",
           "log_writer", "request_stop"]

LEASE_TABLE = "maintainer_lease"
#: A maintainer lease not renewed for this long may be taken by another maintainer.
LEASE_SECONDS = 120.0
LOG_LEASE_TABLE = "log_writer_lease"
#: A log writer lease not renewed for this long may be taken (shorter than the wait below, so
#: a waiter outlives a holder that died on another host).
LOG_LEASE_SECONDS = 30.0
#: How long a second log writer waits for the lease by default before it gives up.
LOG_WAIT_SECONDS = 120.0
#: Attempts at one compare-and-swap before giving up (each failed attempt means another writer
#: committed in between, so this many in a row means a storm of writers).
_CAS_ATTEMPTS = 20
#: A waiter's first and longest pause between looks at a busy lease.
_FIRST_POLL, _LONGEST_POLL = 0.05, 1.0
#: The leases this process holds, by (lease table, lake root URI) (see :func:`check_held`).
_HELD: dict[tuple[str, str], Lease] = {}


class LostLeaseError(LakeError):
    """This process's lease was taken by another writer."""


@dataclass(frozen=True)
class LeaseKind:
    """What one lease guards, in words: its table and the sentences its errors are made of."""

    table: str
    name: str      # "maintainer lease"
    busy: str      # "the lake is being maintained by"
    advice: str    # what to do about a live holder
    lost: str      # what a holder that lost the lease does


MAINTAINER = LeaseKind(
    LEASE_TABLE, "maintainer lease", "the lake is being maintained by",
    "Stop that maintainer (a follower stops after its batch on SIGTERM) or run this once it has "
    "ended",
    "this maintainer lost the lake's lease (now held by {holder}): it stops before committing; "
    "the holder's next batch restores what it wrote")
LOG_WRITER = LeaseKind(
    LOG_LEASE_TABLE, "log writer lease", "the lake's update log is being written by",
    "Run this again once it has ended",
    "this log writer lost the lake's log writer lease (now held by {holder}): it stops before "
    "its commit marker; the next writer replaces what it wrote")


@dataclass(frozen=True)
class LeaseHolder:
    """The lease row: who holds (or last held) the lease, and until when."""

    owner: str
    host: str
    pid: int
    command: str
    acquired_at: datetime
    expires_at: datetime
    released: bool = False
    stop_requested: bool = False  # ``aspen maintain --stop`` asked the holder to stop
    follower: bool = False        # a follower (``--follow``), not a one-batch run

    def describe(self) -> str:
        """Who this is, in words.

        >>> t = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
        >>> LeaseHolder("o", "h1", 42, "maintain --follow", t, t).describe()
        "'maintain --follow' (pid 42 on h1, since 2026-12-01 12:00:00 UTC)"
        """
        return (f"'{self.command}' (pid {self.pid} on {self.host}, "
                f"since {self.acquired_at:%Y-%m-%d %H:%M:%S} UTC)")

    def is_live(self, now: datetime) -> bool:
        """Whether the lease is held at ``now``: not released, not expired, and not left by a
        process of this host that is gone."""
        if self.released or self.expires_at <= now:
            return False
        return not (self.host == socket.gethostname() and not process_alive(self.pid))

    def blocks(self, owner: str, now: datetime) -> bool:
        """Whether this row keeps ``owner`` from taking the lease at ``now``: someone else
        holds it, live."""
        return self.owner != owner and self.is_live(now)


def _now() -> datetime:
    return datetime.now(UTC)


def _read(settings: Settings, lease_table: str = LEASE_TABLE):
    """The lease table and its row (``None`` when there is no table or no row)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(settings.table_uri(lease_table))
    except TableNotFoundError:
        return None, None
    rows = table.to_pyarrow_table().to_pylist()
    if not rows:
        return table, None
    row = rows[0]
    return table, LeaseHolder(
        str(row["owner"]), str(row["host"]), int(row["pid"]), str(row["command"]),
        _utc(row["acquired_at"]), _utc(row["expires_at"]), bool(row["released"]),
        bool(row.get("stop_requested") or False), bool(row.get("follower") or False))


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def current_holder(settings: Settings) -> LeaseHolder | None:
    """The maintainer lease row of the lake at ``settings`` (``None`` before any maintainer
    ran)."""
    return _read(settings)[1]


def log_writer(settings: Settings) -> LeaseHolder | None:
    """The log writer lease row of the lake (``None`` before any ingest ran).

    >>> log_writer(Settings(lake="/nonexistent/lake")) is None
    True
    """
    return _read(settings, LOG_LEASE_TABLE)[1]


def check_held(settings: Settings) -> None:
    """Raise :class:`LostLeaseError` if this process entered a :class:`MaintainerLease` for
    the lake and has lost it since; nothing when it holds none (a library caller that
    maintains without a lease, as the benchmarks and most tests do).

    >>> check_held(Settings(lake="/nonexistent/lake"))
    """
    lease = _HELD.get((LEASE_TABLE, settings.lake_uri))
    if lease is not None:
        lease.check()


def live_follower(settings: Settings) -> LeaseHolder | None:
    """The follower that holds the lake's lease now, if one does (the pipeline DAG then leaves
    apply and maintain to it).

    >>> live_follower(Settings(lake="/nonexistent/lake")) is None
    True
    """
    row = current_holder(settings)
    return row if row is not None and row.follower and row.is_live(_now()) else None


def request_stop(settings: Settings) -> LeaseHolder | None:
    """Ask the lake's live maintainer to stop after its current batch (a follower looks at
    each poll); the holder asked, or ``None`` when no live maintainer holds the lease.

    A follower started by ``spark-submit`` cannot be stopped gently by a signal (SIGTERM
    reaches the JVM, which ends the application at once), nor can one on a remote driver:
    this request travels through the lake instead.

    >>> request_stop(Settings(lake="/nonexistent/lake")) is None
    True
    """
    for _ in range(_CAS_ATTEMPTS):
        table, row = _read(settings)
        if row is None or row.released or row.expires_at <= _now():
            return None
        if row.stop_requested or _swap(settings, table, replace(row, stop_requested=True)):
            return row
    raise LakeError(f"could not ask the maintainer to stop in {_CAS_ATTEMPTS} attempts")


def _swap(settings: Settings, table, row: LeaseHolder, lease_table: str = LEASE_TABLE) -> bool:
    """Write ``row`` as the lease if the table is still at the version ``table`` was read at
    (with ``table`` ``None``: create the table empty, write nothing, return False so the caller
    reads it and swaps); whether it was written."""
    import pyarrow as pa
    from deltalake import CommitProperties, write_deltalake
    from deltalake.exceptions import CommitFailedError, DeltaError

    data = pa.Table.from_pylist([asdict(row)], schema=pa.schema([
        ("owner", pa.string()), ("host", pa.string()), ("pid", pa.int64()),
        ("command", pa.string()), ("acquired_at", pa.timestamp("us", "UTC")),
        ("expires_at", pa.timestamp("us", "UTC")), ("released", pa.bool_()),
        ("stop_requested", pa.bool_()), ("follower", pa.bool_())]))
    try:
        if table is None:
            # The first writer creates the table *empty* and takes the lease by a
            # compare-and-swap like any later one: delta-rs's create is not atomic (two processes
            # creating one table at once may both succeed), its versioned commits are.
            try:
                write_deltalake(settings.table_uri(lease_table), data.slice(0, 0), mode="error")
            except DeltaError as err:
                if "exists" not in str(err).lower():
                    raise
            return False
        else:
            write_deltalake(table, data, mode="overwrite", schema_mode="overwrite",
                            commit_properties=CommitProperties(max_commit_retries=0))
    except CommitFailedError:
        return False
    return True


class Lease:
    """Hold one of the lake's leases (:attr:`kind`) for a ``with`` block, renewing it from a
    thread; :class:`MaintainerLease` and :class:`LogWriterLease` are the two kinds.

    Entering takes the lease: with ``wait`` 0 it raises :class:`~aspen.errors.LakeError`
    naming the holder when another live writer holds it; with ``wait`` > 0 it looks again
    (backing off from 0.05 s to 1 s between looks) until the lease is free or ``wait`` seconds
    have passed, then raises. Leaving releases it.
    """

    kind: ClassVar[LeaseKind]

    def __init__(self, settings: Settings, command: str, ttl: float, *, follower: bool = False,
                 wait: float = 0.0) -> None:
        if ttl <= 0:
            raise ValueError(f"a lease lasts a positive time, got {ttl}")
        if wait < 0:
            raise ValueError(f"a wait for a lease is not negative, got {wait}")
        self.settings = settings
        self.command = command
        self.ttl = ttl
        self.follower = follower
        self.wait = wait
        self.owner = uuid.uuid4().hex
        self._lost: LeaseHolder | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._thread: int | None = None

    @property
    def _key(self) -> tuple[str, str]:
        return self.kind.table, self.settings.lake_uri

    def __enter__(self) -> Lease:
        self.acquire()
        self._thread = threading.get_ident()
        _HELD[self._key] = self
        self._renewer = threading.Thread(target=self._renew_until_stopped,
                                         name=f"aspen-{self.kind.table}-renewal", daemon=True)
        self._renewer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        if _HELD.get(self._key) is self:
            del _HELD[self._key]
        self.release()

    @classmethod
    @contextmanager
    def reentrant(cls, settings: Settings, command: str, **options: float) -> Iterator[Lease]:
        """The lease of this kind this thread already holds for the lake (checked: a lost one
        raises :class:`LostLeaseError`), else a new one held for the block — so a library
        function that writes the lake (apply, ingest, the sweep) takes its lease itself and
        still runs inside a command that holds it already (``maintain`` applies first).

        Example, on a lake::

            with MaintainerLease.reentrant(settings, "aspen apply"):
                apply_pending(spark, settings)
        """
        held = _HELD.get((cls.kind.table, settings.lake_uri))
        if held is not None and held._thread == threading.get_ident():
            held.check()
            yield held
            return
        with cls(settings, command, **options) as lease:
            yield lease

    def _read(self):
        return _read(self.settings, self.kind.table)

    def _swap(self, table, row: LeaseHolder) -> bool:
        return _swap(self.settings, table, row, self.kind.table)

    def _mine(self, now: datetime) -> LeaseHolder:
        """A fresh claim by this process at ``now``."""
        return LeaseHolder(self.owner, socket.gethostname(), os.getpid(), self.command,
                           now, now + timedelta(seconds=self.ttl), follower=self.follower)

    def _busy(self, row: LeaseHolder) -> str:
        return (f"{self.kind.busy} {row.describe()}; its lease runs until "
                f"{row.expires_at:%H:%M:%S} UTC unless renewed. {self.kind.advice}")

    def acquire(self) -> None:
        """Take the lease, waiting up to ``wait`` seconds while another live writer holds it;
        raise :class:`~aspen.errors.LakeError` naming that writer if it still does."""
        deadline = time.monotonic() + self.wait
        pause = _FIRST_POLL
        failed_swaps = 0
        while True:
            table, row = self._read()
            now = _now()
            if row is not None and row.blocks(self.owner, now):
                left = deadline - time.monotonic()
                if left <= 0:
                    waited = f"waited {self.wait:g} s: " if self.wait else ""
                    raise LeaseBusyError(waited + self._busy(row))
                time.sleep(min(left, pause * random.uniform(0.5, 1.0)))
                pause = min(_LONGEST_POLL, pause * 1.6)
                continue
            if self._swap(table, self._mine(now)):
                return
            failed_swaps += 1  # another writer committed in between: look again
            if failed_swaps >= _CAS_ATTEMPTS and time.monotonic() >= deadline:
                raise LakeError(f"could not take the {self.kind.name}: {_CAS_ATTEMPTS} attempts "
                                "met concurrent writers of the lease table")

    def renew(self) -> None:
        """Extend the lease by ``ttl`` from now; raise :class:`LostLeaseError` if another
        writer holds it."""
        for _ in range(_CAS_ATTEMPTS):
            table, row = self._read()
            if row is None or row.owner != self.owner or row.released:
                self._lost = row
                raise LostLeaseError(self._lost_message(row))
            renewed = replace(row, expires_at=_now() + timedelta(seconds=self.ttl))
            if self._swap(table, renewed):  # a stop request stays
                return
        raise LakeError(f"could not renew the {self.kind.name} in {_CAS_ATTEMPTS} attempts")

    def check(self) -> None:
        """Raise :class:`LostLeaseError` unless this process still holds the lease
        (:func:`~aspen.pipeline.ledger.commit` calls this before the ledger row, so a
        maintainer that lost the lease never commits; an ingest before each append)."""
        row = self._read()[1]
        if self._lost is not None or row is None or row.owner != self.owner or row.released:
            raise LostLeaseError(self._lost_message(row if self._lost is None else self._lost))

    def stop_requested(self) -> bool:
        """Whether ``aspen maintain --stop`` asked this holder to stop (see
        :func:`request_stop`)."""
        row = self._read()[1]
        return row is not None and row.owner == self.owner and row.stop_requested

    def release(self) -> None:
        """Mark the lease released, if this process still holds it."""
        for _ in range(_CAS_ATTEMPTS):
            table, row = self._read()
            if row is None or row.owner != self.owner or row.released:
                return
            if self._swap(table, replace(row, released=True, expires_at=_now())):
                return

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.ttl / 4):
            try:
                self.renew()
            except LostLeaseError:
                return
            except Exception:  # a storage hiccup: try again at the next tick, before expiry
                continue

    def _lost_message(self, row: LeaseHolder | None) -> str:
        holder = "nobody" if row is None or row.released else row.describe()
        return self.kind.lost.format(holder=holder)


class MaintainerLease(Lease):
    """The maintainer lease, for a ``with`` block: a second maintainer is refused at once.

    Example, on a lake::

        with MaintainerLease(Settings(lake="/tmp/lake"), "maintain") as lease:
            run_one_batch()
            lease.check()  # just before the ledger row
    """

    kind = MAINTAINER

    def __init__(self, settings: Settings, command: str, ttl: float = LEASE_SECONDS,
                 follower: bool = False) -> None:
        super().__init__(settings, command, ttl, follower=follower)


class LogWriterLease(Lease):
    """The log writer lease, for one call that appends to the update log: a second writer
    waits for it up to ``wait`` seconds.

    >>> import tempfile
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> with LogWriterLease(lake, "aspen ingest") as lease:
    ...     log_writer(lake).owner == lease.owner
    True
    >>> log_writer(lake).released
    True
    """

    kind = LOG_WRITER

    def __init__(self, settings: Settings, command: str, ttl: float = LOG_LEASE_SECONDS,
                 wait: float = LOG_WAIT_SECONDS) -> None:
        super().__init__(settings, command, ttl, wait=wait)
