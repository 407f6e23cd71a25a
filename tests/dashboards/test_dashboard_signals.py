"""``aspen dashboard`` passes SIGTERM on to its server and leaves nothing running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_browser import free_port, stop, wait_healthy
from test_dashboard_provenance_pages import provenance_lake  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_stops_the_server_too(provenance_lake: Path, tmp_path: Path) -> None:  # noqa: F811
    port = free_port()
    log = tmp_path / "dashboard.log"
    command = [sys.executable, "-m", "aspen.cli.main", "--lake", str(provenance_lake),
               "dashboard", "--port", str(port)]
    env = {**os.environ, "ASPEN_DASHBOARD_WARM": "0"}
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process, log)
        servers = children_of(process.pid)
        assert len(servers) == 1, servers
        process.send_signal(signal.SIGTERM)  # the aspen process only, not its group
        assert process.wait(timeout=60) == 0
        deadline = time.monotonic() + 30
        while alive(servers[0]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(servers[0]), log.read_text()[-2000:]
    finally:
        stop(process)
