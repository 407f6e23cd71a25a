"""``aspen dashboard``: start the read-only Streamlit dashboard on 127.0.0.1.

The lake goes to the server twice: after ``--`` (``--lake URI``) and as ``ASPEN_LAKE`` in its
environment, which every page reads whether or not ``app.py`` ran first (a deep link). To serve
it to others, put an authenticating reverse proxy in front (docs/operating-the-dashboard.md).

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers()
>>> register(sub)
>>> streamlit_command(Path("app.py"), "/tmp/lake", 8600)[1:]
['-m', 'aspen.cli.dashboard_server', 'app.py', '--server.address', '127.0.0.1', \
'--server.port', '8600', '--server.headless', 'true', '--browser.gatherUsageStats', 'false', \
'--', '--lake', '/tmp/lake']
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from aspen.errors import ConfigError, SetupError
from aspen.settings import Settings

__all__ = ["DEFAULT_PORT", "app_path", "register", "run", "serve", "server_environment",
           "streamlit_command"]

DEFAULT_PORT = 8501
#: The dashboard is for the local operator only; never bind it to other interfaces.
ADDRESS = "127.0.0.1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dashboard", help="start the Streamlit dashboard (http://127.0.0.1:PORT)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    p.set_defaults(func=run)


def app_path() -> Path:
    """``dashboards/app.py`` of the source tree (``$ASPEN_DASHBOARD_APP`` overrides it)."""
    override = os.environ.get("ASPEN_DASHBOARD_APP")
    path = (
        Path(override)
        if override
        else Path(__file__).resolve().parents[3] / "dashboards" / "app.py"
    )
    if not path.is_file():
        raise SetupError(
            f"the dashboard app {path} does not exist; run from the source tree "
            "(pip install -e .) or set ASPEN_DASHBOARD_APP"
        )
    return path


def streamlit_command(app: Path, lake: str, port: int) -> list[str]:
    """The command line of the dashboard's server for ``app`` on ``lake``: Streamlit's ``run``
    with the provenance-warming thread (:mod:`aspen.cli.dashboard_server`)."""
    return [
        sys.executable,
        "-m",
        "aspen.cli.dashboard_server",
        str(app),
        "--server.address",
        ADDRESS,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--",
        "--lake",
        lake,
    ]


def run(args: argparse.Namespace, settings: Settings) -> int:
    port = int(getattr(args, "port", DEFAULT_PORT))
    if not 0 < port < 65536:
        raise ConfigError(f"--port must be between 1 and 65535, got {port}")
    command = streamlit_command(app_path(), settings.lake_uri, port)
    print(f"aspen dashboard: http://{ADDRESS}:{port} (lake {settings.lake_uri}); Ctrl-C stops it",
          flush=True)
    return serve(command, server_environment(settings))


#: Signals passed on to the server: whoever stops ``aspen dashboard`` stops the server too.
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def serve(command: list[str], env: dict[str, str]) -> int:
    """Run the server ``command`` until it exits; SIGTERM, SIGINT and SIGHUP sent to this
    process are passed on to it, so stopping ``aspen dashboard`` leaves nothing running.
    Returns the server's exit status (0 when it stopped on a forwarded signal)."""
    child = subprocess.Popen(command, env=env)
    forwarded: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signum)
        if child.poll() is None:
            child.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED_SIGNALS}
    try:
        status = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0 if forwarded and status in (0, -forwarded[0]) else status


def server_environment(settings: Settings) -> dict[str, str]:
    """The environment of the Streamlit server: this one, with ``ASPEN_LAKE`` the lake's URI.

    >>> server_environment(Settings(lake="s3a://bucket/lake"))["ASPEN_LAKE"]
    's3a://bucket/lake'
    """
    return {**os.environ, "ASPEN_LAKE": settings.lake_uri}
