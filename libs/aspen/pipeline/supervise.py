"""A warm, supervised follower for the pipeline DAG.

The pipeline DAG's first task calls :func:`ensure_follower` at every run. It reads the lake's
maintainer lease (:mod:`aspen.lake.lease`) and decides (:func:`decide`):

- a live follower holds it: nothing to do, the follower is reported healthy (holder, pid, host,
  seconds since its last renewal);
- nobody holds it, its holder released it, its lease expired, or its holder ran on this host and
  is gone (a ``kill -9``): a follower is started, detached in its own session —
  ``python -m aspen.pipeline.maintainer_main --lake L --runtime R --partitions P --mode M
  --follow --inbox INBOX`` (the arguments of ``aspen maintain``) with its output appended to a
  log file — and the task waits until its lease is
  live (``start_timeout``, 60 s). A follower that exits before that raises
  :class:`FollowerError` naming its last log line and the log;
- a follower of this host still runs but its lease expired (it stopped renewing: stuck): it
  counts as failed, gets SIGTERM, then SIGKILL, and a new one is started;
- a one-batch maintainer holds it (``aspen maintain``, the TTL sweep, housekeeping), or a
  follower was asked to stop: the task waits for it to end (``start_timeout``), then starts one.

The follower ingests what lands in the inbox itself (moving it to ``<inbox>/ingested``), so the
DAG's ``ingest`` task skips while :func:`watching_follower` names one, once the follower has
ingested and committed the inbox's files (:func:`wait_for_inbox`); ``apply`` and ``maintain``
skip while any follower holds the lease. :func:`stop_follower` is ``aspen
maintain --stop`` with a kill as last resort, to turn warm mode off.

>>> t = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
>>> decide(None, t, host="h", running=lambda pid: True).action
'start'
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

from aspen.errors import AspenError
from aspen.lake.lease import LEASE_SECONDS, LeaseHolder, current_holder, request_stop
from aspen.settings import Settings

__all__ = ["FOLLOWER_LOG", "Decision", "FollowerError", "FollowerStatus", "decide",
           "ensure_follower", "follower_command", "follower_log_path", "stop_follower",
           "wait_for_inbox", "watched_inbox", "watching_follower"]

#: The follower's log, next to the inbox (``<inbox>/../.aspen-follower.log``).
FOLLOWER_LOG = ".aspen-follower.log"
#: Seconds :func:`ensure_follower` waits for a started follower's lease (or a busy lease).
START_TIMEOUT = 60.0
#: Seconds a follower gets between SIGTERM (it stops between batches) and SIGKILL.
TERM_GRACE = 10.0
#: A log larger than this is moved to ``<log>.1`` before a follower is started.
LOG_ROTATE_BYTES = 10 * 1024 * 1024
#: Lines of the log a :class:`FollowerError` keeps.
TAIL_LINES = 20
_POLL = 0.2


class FollowerError(AspenError):
    """The follower could not be started, or died; ``tail`` holds the last lines of its log."""

    def __init__(self, message: str, tail: list[str] | None = None) -> None:
        super().__init__(message)
        self.tail = tail or []


class Launched(Protocol):
    """A started process: its pid and whether it has exited (``subprocess.Popen`` is one)."""

    pid: int

    def poll(self) -> int | None: ...


Launcher = Callable[[list[str], Path], Launched]
#: The followers this process started, by pid (polled, so one that died is reaped: a zombie
#: child would still look alive to the lease).
_LAUNCHED: dict[int, Launched] = {}


@dataclass(frozen=True)
class Decision:
    """What :func:`ensure_follower` does about the lease it read, and why, in words."""

    action: str  # "healthy" | "start" | "restart" (kill the holder, then start) | "wait"
    reason: str


@dataclass(frozen=True)
class FollowerStatus:
    """The follower after :func:`ensure_follower`: ``state`` is ``healthy`` (it was running)
    or ``started``; ``reason`` says why one was started."""

    state: str
    holder: LeaseHolder
    renewed_ago: float  # seconds since the holder last renewed its lease
    log_path: Path
    reason: str = ""

    @property
    def pid(self) -> int:
        """The follower's process id (on :attr:`host`)."""
        return self.holder.pid

    @property
    def host(self) -> str:
        """The machine the follower runs on."""
        return self.holder.host

    @property
    def inbox(self) -> Path | None:
        """The inbox the follower ingests, if it was started with one."""
        return watched_inbox(self.holder)

    def describe(self) -> str:
        """One line for the task log.

        >>> t = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
        >>> row = LeaseHolder("o", "h1", 42, "aspen maintain --follow --inbox /in", t, t)
        >>> print(FollowerStatus("healthy", row, 3.04, Path("/x/f.log")).describe())
        ... # doctest: +NORMALIZE_WHITESPACE
        follower healthy: pid 42 on h1, since 2026-12-01 12:00:00 UTC, lease renewed 3.0 s ago,
        ingesting /in (log: /x/f.log)
        """
        why = f" ({self.reason})" if self.reason else ""
        inbox = self.inbox
        watching = "not ingesting an inbox" if inbox is None else f"ingesting {inbox}"
        return (f"follower {self.state}{why}: pid {self.pid} on {self.host}, since "
                f"{self.holder.acquired_at:%Y-%m-%d %H:%M:%S} UTC, lease renewed "
                f"{self.renewed_ago:.1f} s ago, {watching} (log: {self.log_path})")


def follower_log_path(inbox: Path) -> Path:
    """Where the follower of the DAG run with ``inbox`` writes its output.

    >>> follower_log_path(Path("/srv/aspen/inbox"))
    PosixPath('/srv/aspen/.aspen-follower.log')
    """
    return inbox.parent / FOLLOWER_LOG


def watched_inbox(holder: LeaseHolder | None) -> Path | None:
    """The inbox a lease holder ingests (its command ends ``--inbox DIR``), else ``None``.

    >>> t = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    >>> watched_inbox(LeaseHolder("o", "h", 1, "aspen maintain --follow --inbox /a b", t, t))
    PosixPath('/a b')
    """
    if holder is None or " --inbox " not in holder.command:
        return None
    return Path(holder.command.rpartition(" --inbox ")[2])


def watching_follower(settings: Settings, inbox: Path) -> LeaseHolder | None:
    """The live follower of the lake that ingests ``inbox`` itself, if one does (the DAG's
    ``ingest`` then skips); a follower without ``--inbox``, or with another, is not one.

    >>> watching_follower(Settings(lake="/nonexistent/lake"), Path("/tmp/inbox")) is None
    True
    """
    from aspen.lake.lease import live_follower

    holder = live_follower(settings)
    watched = watched_inbox(holder)
    if holder is None or watched is None or watched != inbox.resolve():
        return None
    return holder


def follower_command(settings: Settings, inbox: Path, runtime: str, partitions: int,
                     mode: str) -> list[str]:
    """The command line of a follower of the lake that ingests ``inbox``.

    >>> follower_command(Settings(lake="/l"), Path("/in"), "local", 2, "lazy")[1:4]
    ['-m', 'aspen.pipeline.maintainer_main', '--lake']
    """
    return [sys.executable, "-m", "aspen.pipeline.maintainer_main", "--lake", settings.lake_uri,
            "--runtime", runtime, "--partitions", str(partitions), "--mode", mode, "--follow",
            "--inbox", str(inbox.resolve())]


def decide(holder: LeaseHolder | None, now: datetime, *, host: str,
           running: Callable[[int], bool]) -> Decision:
    """What to do about the maintainer lease row ``holder`` at ``now``, on machine ``host``
    where ``running(pid)`` tells whether a process runs. The lease takes over exactly these
    cases too (:meth:`~aspen.lake.lease.LeaseHolder.is_live`): released, expired, or held by a
    process of this host that is gone.

    >>> t = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    >>> row = LeaseHolder("o", "h", 7, "aspen maintain --follow", t, t + timedelta(seconds=60),
    ...                   follower=True)
    >>> decide(row, t, host="h", running=lambda pid: True).action
    'healthy'
    >>> decide(row, t, host="h", running=lambda pid: False).action
    'start'
    >>> decide(row, t + timedelta(seconds=90), host="h", running=lambda pid: True).action
    'restart'
    """
    if holder is None:
        return Decision("start", "no maintainer has held the lease")
    if holder.released:
        return Decision("start", f"the last holder {holder.describe()} released the lease")
    here = holder.host == host
    alive = here and running(holder.pid)
    if holder.expires_at <= now:
        ago = (now - holder.expires_at).total_seconds()
        if alive and holder.follower:
            return Decision("restart", f"the follower pid {holder.pid} still runs but its lease "
                                       f"expired {ago:.0f} s ago")
        return Decision("start", f"the lease of {holder.describe()} expired {ago:.0f} s ago")
    if here and not alive:
        return Decision("start", f"the holder pid {holder.pid} on {host} is gone")
    if not holder.follower:
        return Decision("wait", f"a one-batch maintainer {holder.describe()} holds the lease")
    if holder.stop_requested:
        return Decision("wait", f"the follower {holder.describe()} was asked to stop")
    return Decision("healthy", "")


def ensure_follower(settings: Settings, inbox: Path, runtime: str, partitions: int, mode: str,
                    log_path: Path, *, start_timeout: float = START_TIMEOUT,
                    launcher: Launcher | None = None) -> FollowerStatus:
    """Make sure a live follower maintains the lake: report the one holding the lease, or
    start one that ingests ``inbox`` (see the module docstring); its output is appended to
    ``log_path``. Raises :class:`FollowerError` when the follower exits before its lease is
    live, or the lease stays busy for ``start_timeout`` seconds. ``launcher(command,
    log_path)`` starts the process (a test's fake; default: detached ``subprocess.Popen``).

    Example, on a lake::

        status = ensure_follower(Settings(lake="/srv/lake"), Path("/srv/inbox"), "local", 4,
                                 "lazy", Path("/srv/.aspen-follower.log"))
        status.state, status.pid
        # ('started', 4242)
    """
    launch = launcher or _popen
    deadline = time.monotonic() + start_timeout
    while True:
        _reap()
        holder = current_holder(settings)
        now = datetime.now(UTC)
        decision = decide(holder, now, host=socket.gethostname(), running=_running)
        if decision.action == "healthy":
            assert holder is not None
            return FollowerStatus("healthy", holder, _renewed_ago(holder, now), log_path)
        if decision.action == "wait":
            if time.monotonic() >= deadline:
                raise FollowerError(f"no follower started: {decision.reason} still, after "
                                    f"{start_timeout:g} s")
            time.sleep(_POLL)
            continue
        if decision.action == "restart":
            assert holder is not None
            _terminate(holder.pid)
        if holder is not None and holder.host == socket.gethostname() \
                and not _running(holder.pid):  # a zombie counts as alive to the lease: wait
            _wait_gone(holder.pid, max(0.0, deadline - time.monotonic()))
        command = follower_command(settings, inbox, runtime, partitions, mode)
        process = launch(command, log_path)
        _LAUNCHED[process.pid] = process
        return _await_lease(settings, process, log_path, decision.reason, deadline,
                            start_timeout)


def stop_follower(settings: Settings, timeout: float = START_TIMEOUT) -> LeaseHolder | None:
    """Ask the lake's live maintainer to stop (``aspen maintain --stop``) and wait until it no
    longer holds the lease and, on this host, its process is gone; after ``timeout`` seconds a
    follower of this host is killed (SIGTERM, then SIGKILL). The holder asked, or ``None``
    when no live maintainer held the lease.

    >>> stop_follower(Settings(lake="/nonexistent/lake")) is None
    True
    """
    holder = request_stop(settings)
    if holder is None:
        _reap()
        return None
    here = holder.host == socket.gethostname()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = current_holder(settings)
        held = (row is not None and row.owner == holder.owner
                and row.is_live(datetime.now(UTC)))
        if not held:  # released: on this host, wait until its process has gone too
            if not here or _wait_gone(holder.pid, max(0.0, deadline - time.monotonic())):
                return holder
            break
        time.sleep(_POLL)
    if here and holder.follower:
        _terminate(holder.pid)
        return holder
    raise FollowerError(f"{holder.describe()} did not stop within {timeout:g} s")


def wait_for_inbox(settings: Settings, inbox: Path, timeout: float = START_TIMEOUT) -> str:
    """Wait until the follower ingesting ``inbox`` has taken every update file landed there
    (moved into ``<inbox>/ingested``) and committed a maintained batch through everything it
    ingested (no update left to apply, the registry no further than the ledger), so the
    expectations that follow check it; a line saying so, or, after ``timeout`` seconds, that it
    is not there yet. Raises :class:`FollowerError` when no live follower ingests ``inbox`` any
    more (a retry of the task then ingests the files itself).

    Example, on a lake::

        wait_for_inbox(settings, Path("/srv/inbox"))
        # 'the follower pid 4242 on h1 ingested 1 file(s) of /srv/inbox and committed batch 3'
    """
    from aspen.lake.apply_local import pending_updates
    from aspen.pipeline.batch import registry_through
    from aspen.pipeline.inbox import waiting_files
    from aspen.pipeline.ledger import last_committed

    landed = len(waiting_files(settings, inbox))
    deadline = time.monotonic() + timeout
    while True:
        follower = watching_follower(settings, inbox)
        if follower is None:
            raise FollowerError(f"no live follower ingests {inbox} any more; "
                                f"see {follower_log_path(inbox)}")
        who = f"the follower pid {follower.pid} on {follower.host}"
        left = len(waiting_files(settings, inbox))
        if not left and not pending_updates(settings):
            committed = last_committed(settings)
            if registry_through(settings) <= committed.through_ingest_batch:
                return (f"{who} ingested {landed} file(s) of {inbox} and committed batch "
                        f"{committed.batch_id}")
        if time.monotonic() >= deadline:
            waiting = (f"{left} file(s) of {inbox} not ingested yet" if left
                       else "its batch not committed yet")
            return f"{who} has not caught up after {timeout:g} s ({waiting}); it carries on"
        time.sleep(_POLL)


def _renewed_ago(holder: LeaseHolder, now: datetime) -> float:
    """Seconds since ``holder`` last renewed (its lease runs ``LEASE_SECONDS`` from then)."""
    renewed = holder.expires_at - timedelta(seconds=LEASE_SECONDS)
    return max(0.0, (now - max(renewed, holder.acquired_at)).total_seconds())


def _await_lease(settings: Settings, process: Launched, log_path: Path, reason: str,
                 deadline: float, start_timeout: float) -> FollowerStatus:
    """Wait until the started ``process`` holds the lake's lease, live, as a follower."""
    while True:
        holder = current_holder(settings)
        now = datetime.now(UTC)
        live = holder is not None and holder.follower and holder.is_live(now)
        if live and holder is not None and holder.pid == process.pid:
            return FollowerStatus("started", holder, _renewed_ago(holder, now), log_path, reason)
        code = process.poll()
        if code is not None:
            _LAUNCHED.pop(process.pid, None)
            if live and holder is not None:  # another follower won the race for the lease
                return FollowerStatus("healthy", holder, _renewed_ago(holder, now), log_path)
            tail = _tail(log_path)
            last = tail[-1] if tail else "no output"
            raise FollowerError(f"the follower exited with code {code} before it held the "
                                f"lake's lease: {last!r}; see {log_path}", tail)
        if time.monotonic() >= deadline:
            _terminate(process.pid)
            raise FollowerError(f"the follower pid {process.pid} did not hold the lake's lease "
                                f"within {start_timeout:g} s; see {log_path}", _tail(log_path))
        time.sleep(_POLL)


def _popen(command: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``command`` detached (its own session, no terminal, no inherited descriptors)
    with its output appended to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if log_path.exists() and log_path.stat().st_size > LOG_ROTATE_BYTES:
        log_path.replace(log_path.with_name(log_path.name + ".1"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env.setdefault("PYSPARK_PYTHON", sys.executable)  # a chore or query on Spark
    with log_path.open("ab") as log:
        log.write(f"--- {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC: "
                  f"{shlex.join(command)}\n".encode())
        log.flush()
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=env, cwd=log_path.parent,
                                start_new_session=True)


def _reap() -> None:
    """Collect the exit status of the followers this process started that have ended."""
    for pid, process in list(_LAUNCHED.items()):
        if process.poll() is not None:
            del _LAUNCHED[pid]


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine: it exists and is not a zombie."""
    from aspen.spark.host_process import process_alive

    if not process_alive(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (or it ended just now): trust the signal
        return process_alive(pid)
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _wait_gone(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds until ``pid`` no longer exists on this machine, zombie
    included (the lease counts a zombie as alive: one that is a child of this process is
    reaped, another one's parent or init reaps it); whether it is gone."""
    from aspen.spark.host_process import process_alive

    deadline = time.monotonic() + timeout
    while True:
        _reap()
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not a child of this process
            pass
        if not process_alive(pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL)


def _terminate(pid: int, grace: float | None = None) -> None:
    """SIGTERM ``pid`` (a follower stops between batches), then after ``grace`` seconds
    (:data:`TERM_GRACE`) SIGKILL it — its whole process group when it leads one (its JVM, its
    host processes)."""
    grace = TERM_GRACE if grace is None else grace
    if pid == os.getpid():  # a follower run inside this process (a test): never oneself
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap()
        if not _running(pid):
            return
        time.sleep(_POLL)
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    _wait_gone(pid, grace)


def _tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` non-empty lines of ``path`` (none when it cannot be read)."""
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 64 * 1024))
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]
