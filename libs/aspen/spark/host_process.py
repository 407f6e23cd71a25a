"""A process per host that keeps a host's query nodes in memory for a Spark application's life.

A round's task for host ``h`` (and the publish task of a node of ``h``) may run in any of the
executor's Python workers, and Spark picks an idle one with no regard for what it holds. Each
worker keeps the nodes it restored (:class:`~aspen.runtime.rounds.NodeCache`), so a node whose
next task lands in another worker is decoded again, often several times a batch, and a
deletion's publish decoded again the nodes its round had just run (measurements:
docs/performance.md).

:func:`run_on_host` sends the task's function and arguments to the *host process* of
``(application, host)`` on this machine — started by the first task that needs it — and
returns its answer. One process per host serves its requests one at a time, so a host's nodes
stay in one memory, hosts run in parallel in their own processes, and a task's result is what
the function returns in the worker. Nothing is lost if the process dies: the node states are in
``node_state``; the next task starts a new process, which restores them (a failed request fails
the task, and Spark retries it).

A host process exits when the Python worker daemon that started it is gone (the application
ended) or after :data:`IDLE_SECONDS` without a request. Its socket lives in a directory of the
machine's temporary directory that only this user may enter (a request is a pickle), named after
the application, so another application never reaches it.

>>> socket_path("local-1", 3).name
'aspen-59e27c0f3729c1eb-3.sock'
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pickle
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aspen.errors import EngineError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["IDLE_SECONDS", "process_alive", "run_on_host", "serve", "socket_path"]

#: A host process exits after this long without a request.
IDLE_SECONDS = 600.0
#: How often an idle host process checks that the worker daemon that started it is alive.
_POLL_SECONDS = 2.0
#: How long a task waits for a host process it started to listen.
_START_SECONDS = 60.0
_HEADER = struct.Struct("!Q")
#: The host processes this Python worker started (kept so that their exit is reaped).
_STARTED: list[subprocess.Popen] = []


def socket_path(application: str, host: int) -> Path:
    """Where the host process of ``host`` in ``application`` listens (short: Unix socket
    paths are limited to about 100 bytes)."""
    digest = hashlib.sha256(application.encode()).hexdigest()[:16]
    return (Path(tempfile.gettempdir()) / f"aspen-hosts-{os.getuid()}"
            / f"aspen-{digest}-{host}.sock")


def _private_directory(path: Path) -> None:
    """Create the sockets' directory readable by this user only (a request is a pickle: whoever
    can connect can run code as this user), and refuse one that another user owns or can enter."""
    path.mkdir(mode=0o700, exist_ok=True)
    status = path.stat()
    if status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise EngineError(f"{path} must belong to this user and be private to it (mode 700)")


def run_on_host(application: str, host: int, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` run by the host process of ``host`` (started if it is not running);
    its exception, if it raises, is raised here. ``function`` must be importable by name.

    Example, in a Spark application::

        run_on_host("doctest-app", 0, max, 2, 5)
        # 5
    """
    with contextlib.closing(_connect(socket_path(application, host))) as sock:
        _send(sock, (function, args))
        status, value = _receive(sock)
    if status == "error":
        raise value
    return value


def _dial(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        raise
    return sock


def _connect(path: Path) -> socket.socket:
    """A connection to the host process at ``path``, starting it if none listens (a lock file
    keeps two tasks from starting two). The directory is checked first: a socket in a
    directory another user could enter may not be the host process's."""
    _private_directory(path.parent)
    with contextlib.suppress(FileNotFoundError, ConnectionRefusedError):
        return _dial(path)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with contextlib.suppress(FileNotFoundError, ConnectionRefusedError):
            return _dial(path)
        process = _start(path)
        deadline = time.monotonic() + _START_SECONDS
        while True:
            with contextlib.suppress(FileNotFoundError, ConnectionRefusedError):
                return _dial(path)
            if process.poll() is not None:
                log = path.with_suffix(".log")
                raise EngineError(f"the host process {path.name} exited with code "
                                  f"{process.returncode} before listening (see {log})")
            if time.monotonic() > deadline:
                raise EngineError(f"the host process {path.name} did not listen within "
                                  f"{_START_SECONDS:.0f} s")
            time.sleep(0.02)


def _start(path: Path) -> subprocess.Popen:
    """Start the host process for ``path``: this interpreter, this worker's import path; it
    watches this worker's parent (the worker daemon, which lives as long as the executor)."""
    for done in [p for p in _STARTED if p.poll() is not None]:
        _STARTED.remove(done)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    with open(path.with_suffix(".log"), "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "aspen.spark.host_process", str(path), str(os.getppid())],
            env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)
    _STARTED.append(process)
    return process


def _send(sock: socket.socket, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)))
    sock.sendall(data)


def _exactly(sock: socket.socket, size: int) -> bytearray:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        received = sock.recv_into(view[got:])
        if not received:
            raise EngineError("the host process closed the connection mid-message (it died?)")
        got += received
    return buffer


def _receive(sock: socket.socket) -> Any:
    (size,) = _HEADER.unpack(_exactly(sock, _HEADER.size))
    return pickle.loads(_exactly(sock, size))


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (owned by anyone).

    >>> process_alive(os.getpid())
    True
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _answer(request: tuple[Callable[..., Any], tuple[Any, ...]]) -> tuple[str, Any]:
    function, args = request
    try:
        return "ok", function(*args)
    except Exception as error:  # the task raises it
        error.add_note(f"in the host process {os.getpid()}:\n{traceback.format_exc()}")
        return "error", error


def serve(path: Path, watched: int, idle: float = IDLE_SECONDS) -> None:
    """Answer requests at ``path`` one at a time until process ``watched`` is gone or nothing
    came for ``idle`` seconds."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a socket left by a host process that died
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(16)
    listener.settimeout(_POLL_SECONDS)
    inode = path.stat().st_ino
    last = time.monotonic()
    try:
        while process_alive(watched) and time.monotonic() - last < idle:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(None)
                try:
                    reply = _answer(_receive(connection))
                except EngineError:
                    continue  # the task went away mid-request
                try:
                    _send(connection, reply)
                except (pickle.PicklingError, TypeError, AttributeError) as error:
                    _send(connection, ("error", EngineError(f"{reply[1]!r} ({error})")))
                except OSError:
                    pass  # the task went away
            last = time.monotonic()
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_ino == inode:  # not a successor's socket
                path.unlink()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), int(sys.argv[2]))
