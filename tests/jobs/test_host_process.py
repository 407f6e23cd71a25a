"""The host processes that keep a host's query nodes in memory (aspen.spark.host_process),
outside Spark: the same process answers a host's requests, another host gets another process,
an error comes back as itself, and a process that died is replaced."""

from __future__ import annotations

import os
import signal
import tempfile
import uuid

import pytest

from aspen.errors import EngineError
from aspen.spark.host_process import run_on_host, socket_path


@pytest.fixture
def application():
    name = f"test-{uuid.uuid4().hex}"
    yield name
    for host in range(3):  # stop what the test started
        path = socket_path(name, host)
        if path.exists():
            try:
                os.kill(run_on_host(name, host, os.getpid), signal.SIGTERM)
            except OSError:
                pass


def test_a_host_keeps_its_process_and_hosts_get_their_own(application):
    first = run_on_host(application, 0, os.getpid)
    assert first != os.getpid()
    assert run_on_host(application, 0, os.getpid) == first
    assert run_on_host(application, 1, os.getpid) not in (first, os.getpid())
    assert run_on_host(application, 0, max, 2, 7) == 7


def test_an_error_in_the_host_process_is_raised_in_the_task(application):
    with pytest.raises(ValueError, match="invalid literal"):
        run_on_host(application, 0, int, "not a number")
    assert run_on_host(application, 0, int, "12") == 12  # the process still serves


def test_a_dead_host_process_is_replaced(application):
    first = run_on_host(application, 2, os.getpid)
    os.kill(first, signal.SIGKILL)
    os.waitpid(first, 0)  # this test's process started it
    second = run_on_host(application, 2, os.getpid)
    assert second != first


def test_a_socket_directory_others_may_enter_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    directory = socket_path("any", 0).parent
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    with pytest.raises(EngineError, match="private"):
        run_on_host("any", 0, os.getpid)
