"""The maintainer lease: one process at a time maintains a lake's views.

Two maintainers on one lake — the pipeline DAG's ``maintain`` task and a follower
(``aspen maintain --follow``), or two followers — would each compute the next batch from the
same committed state, restore each other's tables as "uncommitted" and both commit it. The
lease prevents that: ``aspen maintain`` holds it for its run, a follower for its life.

The lease is the one row of the Delta table ``maintainer_lease`` under the lake root: who holds
it (``owner``, ``host``, ``pid``, ``command``, whether a ``follower``), since when, until when
(``expires_at``), whether it was ``released`` and whether ``aspen maintain --stop`` asked its
holder to stop (``stop_requested``). It is taken and renewed by **compare-and-swap on the table's
version**: a writer reads the row at version *v* and overwrites it committing exactly version
*v + 1* (delta-rs with no commit retries), so of two writers that read the same version one
commit fails, re-reads and sees the other's claim. A holder renews the lease every
``ttl / 4`` seconds from a thread while it works; a lease not renewed for ``ttl`` seconds (its
holder died, or is stuck) may be taken, and so may at once a lease whose holder ran on this
host and whose process is gone (a job killed by ``kill -9``, rerun on the same machine).

The expiry compares clocks: across machines it assumes their clocks agree to well within
``ttl``. A holder that lost its lease (it was not renewed in time and someone took it) learns
it at its next renewal and at :meth:`MaintainerLease.check`, which a batch calls just before
its ledger row: it then fails before committing, and the new holder's next batch restores what
it wrote.

>>> from aspen.settings import Settings
>>> current_holder(Settings(lake="/nonexistent/lake")) is None
True
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from aspen.errors import LakeError
from aspen.settings import Settings
from aspen.spark.host_process import process_alive

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["LEASE_SECONDS", "LEASE_TABLE", "LeaseHolder", "LostLeaseError", "MaintainerLease",
           "check_held", "current_holder", "live_follower", "request_stop"]

LEASE_TABLE = "maintainer_lease"
#: A lease not renewed for this long may be taken by another maintainer.
LEASE_SECONDS = 120.0
#: Attempts at one compare-and-swap before giving up (each failed attempt means another writer
#: committed in between, so this many in a row means a storm of writers).
_CAS_ATTEMPTS = 20
#: The leases this process holds, by lake root URI (see :func:`check_held`).
_HELD: dict[str, MaintainerLease] = {}


class LostLeaseError(LakeError):
    """This process's maintainer lease was taken by another maintainer."""


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


def _read(settings: Settings):
    """The lease table and its row (``None`` when there is no table or no row)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(settings.table_uri(LEASE_TABLE))
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
    """The lease row of the lake at ``settings`` (``None`` before any maintainer ran)."""
    return _read(settings)[1]


def check_held(settings: Settings) -> None:
    """Raise :class:`LostLeaseError` if this process entered a :class:`MaintainerLease` for
    the lake and has lost it since; nothing when it holds none (a library caller that
    maintains without a lease, as the benchmarks and most tests do).

    >>> check_held(Settings(lake="/nonexistent/lake"))
    """
    lease = _HELD.get(settings.lake_uri)
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


def _swap(settings: Settings, table, row: LeaseHolder) -> bool:
    """Write ``row`` as the lease if the table is still at the version ``table`` was read at
    (or, with ``table`` ``None``, if no lease table exists yet); whether it was written."""
    import pyarrow as pa
    from deltalake import CommitProperties, write_deltalake
    from deltalake.exceptions import CommitFailedError, DeltaError

    data = pa.Table.from_pylist([asdict(row)], schema=pa.schema([
        ("owner", pa.string()), ("host", pa.string()), ("pid", pa.int64()),
        ("command", pa.string()), ("acquired_at", pa.timestamp("us", "UTC")),
        ("expires_at", pa.timestamp("us", "UTC")), ("released", pa.bool_()),
        ("stop_requested", pa.bool_()), ("follower", pa.bool_())]))
    try:
        if table is None:  # the first maintainer of this lake creates the table
            write_deltalake(settings.table_uri(LEASE_TABLE), data, mode="error")
        else:
            write_deltalake(table, data, mode="overwrite", schema_mode="overwrite",
                            commit_properties=CommitProperties(max_commit_retries=0))
    except CommitFailedError:
        return False
    except DeltaError as err:  # a concurrent creation: the table exists now
        if table is None and "exists" in str(err).lower():
            return False
        raise
    return True


class MaintainerLease:
    """Hold the lake's maintainer lease for a ``with`` block, renewing it from a thread.

    Entering raises :class:`~aspen.errors.LakeError` naming the holder when another live
    maintainer holds the lease; leaving releases it.

    >>> with MaintainerLease(Settings(lake="/tmp/lake"), "maintain") as lease:  # doctest: +SKIP
    ...     run_one_batch()
    ...     lease.check()  # just before the ledger row
    """

    def __init__(self, settings: Settings, command: str, ttl: float = LEASE_SECONDS,
                 follower: bool = False) -> None:
        if ttl <= 0:
            raise ValueError(f"a lease lasts a positive time, got {ttl}")
        self.settings = settings
        self.command = command
        self.ttl = ttl
        self.follower = follower
        self.owner = uuid.uuid4().hex
        self._lost: LeaseHolder | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def __enter__(self) -> MaintainerLease:
        self.acquire()
        _HELD[self.settings.lake_uri] = self
        self._renewer = threading.Thread(target=self._renew_until_stopped,
                                         name="aspen-lease-renewal", daemon=True)
        self._renewer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        _HELD.pop(self.settings.lake_uri, None)
        self.release()

    def _mine(self, now: datetime) -> LeaseHolder:
        """A fresh claim by this process at ``now``."""
        return LeaseHolder(self.owner, socket.gethostname(), os.getpid(), self.command,
                           now, now + timedelta(seconds=self.ttl), follower=self.follower)

    def acquire(self) -> None:
        """Take the lease, or raise :class:`~aspen.errors.LakeError` naming its live holder."""
        for _ in range(_CAS_ATTEMPTS):
            table, row = _read(self.settings)
            now = _now()
            if row is not None and row.blocks(self.owner, now):
                raise LakeError(
                    f"the lake is being maintained by {row.describe()}; its lease runs until "
                    f"{row.expires_at:%H:%M:%S} UTC unless renewed. Stop that maintainer (a "
                    "follower stops after its batch on SIGTERM) or run this once it has ended")
            if _swap(self.settings, table, self._mine(now)):
                return
        raise LakeError(f"could not take the maintainer lease: {_CAS_ATTEMPTS} attempts met "
                        "concurrent writers of the lease table")

    def renew(self) -> None:
        """Extend the lease by ``ttl`` from now; raise :class:`LostLeaseError` if another
        maintainer holds it."""
        for _ in range(_CAS_ATTEMPTS):
            table, row = _read(self.settings)
            if row is None or row.owner != self.owner or row.released:
                self._lost = row
                raise LostLeaseError(self._lost_message(row))
            renewed = replace(row, expires_at=_now() + timedelta(seconds=self.ttl))
            if _swap(self.settings, table, renewed):  # a stop request stays
                return
        raise LakeError(f"could not renew the maintainer lease in {_CAS_ATTEMPTS} attempts")

    def check(self) -> None:
        """Raise :class:`LostLeaseError` unless this process still holds the lease
        (:func:`~aspen.pipeline.ledger.commit` calls this before the ledger row, so a
        maintainer that lost the lease never commits)."""
        row = current_holder(self.settings)
        if self._lost is not None or row is None or row.owner != self.owner or row.released:
            raise LostLeaseError(self._lost_message(row if self._lost is None else self._lost))

    def stop_requested(self) -> bool:
        """Whether ``aspen maintain --stop`` asked this holder to stop (see
        :func:`request_stop`)."""
        row = current_holder(self.settings)
        return row is not None and row.owner == self.owner and row.stop_requested

    def release(self) -> None:
        """Mark the lease released, if this process still holds it."""
        for _ in range(_CAS_ATTEMPTS):
            table, row = _read(self.settings)
            if row is None or row.owner != self.owner or row.released:
                return
            if _swap(self.settings, table, replace(row, released=True, expires_at=_now())):
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
        return (f"this maintainer lost the lake's lease (now held by {holder}): it stops "
                "before committing; the holder's next batch restores what it wrote")

