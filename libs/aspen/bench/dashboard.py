"""The console's three first answers, timed in headless Chromium on fresh servers.

Each run starts a fresh dashboard server on a lake (as ``aspen dashboard`` starts it, its
provenance-warming thread included), opens one page as soon as the server answers its health
check, and times what the operator waits for:

* ``overview``: navigation → the Overview drawn (its pipeline tiles, drawn after the
  network's light and tiles);
* ``what_if``: navigation → the page ready, then Simulate (one link chosen) → the answer drawn
  (its network answer's tiles, when the lake holds ``reachable``);
* ``why``: navigation → the page ready, then a far pair chosen → its heading, witnesses and
  map drawn, timed from the last choice.

Nothing is asserted: the numbers are printed (``benchmarks/dashboard.py`` is the script) and the
page's own words are kept with them, so a run that answered something else shows it.

>>> Run("why", 1, 2.0, 0.5, "Why can a reach c?").total_s
2.5
>>> summary([Run("why", 1, 2.0, 0.5, ""), Run("why", 2, 1.0, 1.5, "")])
'median 2.50 s (2.50–2.50); page ready 1.50 s, answer 1.00 s'
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aspen.errors import SetupError
from aspen.settings import Settings

__all__ = ["FLOWS", "Command", "Run", "bytecode_env", "far_pair", "run_flows", "served", "summary"]

#: The server's command line for a lake URI and a port (``aspen.cli.dashboard.streamlit_command``
#: of the app: the CLI is above this package, so its callers pass it).
Command = Callable[[str, int], list[str]]
#: How long one step may take before the run is given up (a loaded machine, a 1,000-node lake).
STEP_TIMEOUT_MS = 600_000
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


@dataclass(frozen=True)
class Run:
    """One flow on one fresh server: seconds to the page ready and from the operator's action
    to the answer drawn (0 for the Overview, whose answer is the page), and the answer's words."""

    flow: str
    run: int
    ready_s: float
    answer_s: float
    seen: str

    @property
    def total_s(self) -> float:
        """Navigation → answer drawn, the operator's own clicks aside."""
        return self.ready_s + self.answer_s


def summary(runs: list[Run]) -> str:
    """Median and spread of the end-to-end times, and the medians of their two parts."""
    totals = [r.total_s for r in runs]
    return (f"median {statistics.median(totals):.2f} s ({min(totals):.2f}–{max(totals):.2f}); "
            f"page ready {statistics.median(r.ready_s for r in runs):.2f} s, "
            f"answer {statistics.median(r.answer_s for r in runs):.2f} s")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def served(lake: Path, command_for: Command, env: dict[str, str] | None = None,
           log: Path | None = None) -> Iterator[tuple[str, float]]:
    """A fresh dashboard server on ``lake`` (``command_for`` its URI and a free port): its URL
    and the seconds until its health check answered; stopped (its process group) afterwards."""
    port = _free_port()
    command = command_for(Settings(lake=str(lake)).lake_uri, port)
    sink = log.open("wb") if log is not None else subprocess.DEVNULL
    process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                               env={**os.environ, **(env or {})}, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        started = time.perf_counter()
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as reply:
                    if reply.read().strip() == b"ok":
                        break
            except OSError:
                if process.poll() is not None or time.perf_counter() - started > 120:
                    raise SetupError(f"the dashboard server on {lake} did not start") from None
                time.sleep(0.1)
        yield url, time.perf_counter() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        if log is not None:
            sink.close()  # type: ignore[union-attr]


def far_pair(lake: Path) -> tuple[str, str]:
    """A pair of routers the most hops apart (``min_hops``; the first such pair in order)."""
    from aspen.lake.committed import read_committed

    frame = read_committed(Settings(lake=str(lake)), "min_hops")
    frame = frame[frame["src"] != frame["dst"]]
    top = frame[frame["hops"] == frame["hops"].max()].sort_values(["src", "dst"])
    return str(top.iloc[0]["src"]), str(top.iloc[0]["dst"])


def _pick(page: Any, box: Any, value: str) -> None:
    """Choose ``value`` in a Streamlit select box by typing it (long lists are virtualised)."""
    box.click()
    page.keyboard.type(value)
    page.get_by_role("option", name=value, exact=True).click()


def overview(page: Any, url: str, tile_label: str = "Views current as of", **_: Any) -> Run:
    started = time.perf_counter()
    page.goto(url, wait_until="commit")
    # the pipeline's first tile: drawn after the network's light and tiles
    tile = page.get_by_test_id("stMetric").filter(has_text=tile_label)
    tile.wait_for()
    ready = time.perf_counter() - started
    routers = page.get_by_test_id("stMetric").filter(has_text="Routers up")
    seen = (routers if routers.count() else tile).inner_text()
    return Run("overview", 0, ready, 0.0, seen.replace("\n", " "))


def what_if(page: Any, url: str, link: str = "→", **_: Any) -> Run:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    started = time.perf_counter()
    page.goto(f"{url}/what_if", wait_until="commit")
    button = page.get_by_role("button", name="Simulate")
    button.wait_for()
    ready = time.perf_counter() - started
    page.get_by_test_id("stMultiSelect").first.click()
    page.get_by_role("option", name=re.compile(re.escape(link))).first.click()
    page.keyboard.press("Escape")
    clicked = time.perf_counter()
    button.click()
    # drawn after the answer in network terms (a lake without ``reachable`` has none)
    caption = page.get_by_text("nothing is recomputed or written")
    caption.wait_for()
    answered = time.perf_counter() - clicked
    metric = page.get_by_test_id("stMetric").filter(has_text="Pairs disconnected")
    try:  # the network answer, when the lake holds ``reachable``; it may draw after the caption
        metric.wait_for(timeout=5_000)
        answered = time.perf_counter() - clicked
        seen = metric.inner_text()
    except PlaywrightTimeout:
        seen = caption.inner_text()
    return Run("what_if", 0, ready, answered, seen.replace("\n", " "))


def why(page: Any, url: str, pair: tuple[str, str] = ("", ""), view: str | None = None,
        **_: Any) -> Run:
    src, dst = pair
    started = time.perf_counter()
    page.goto(f"{url}/why", wait_until="commit")
    boxes = page.get_by_test_id("stSelectbox")
    boxes.nth(2).wait_for()  # question, from, to
    ready = time.perf_counter() - started
    if view is not None:
        _pick(page, boxes.nth(0), view)
    _pick(page, boxes.nth(1), src)
    _pick(page, boxes.nth(2), dst)  # the answer is timed from this choice (typing aside)
    picked = time.perf_counter()
    heading = page.get_by_role("heading", name=re.compile(
        rf"Why .*{re.escape(src)}.*{re.escape(dst)}")).first  # one per tied path
    heading.wait_for()
    page.get_by_test_id("stDataFrame").first.wait_for()
    page.locator(".js-plotly-plot, [data-testid=stGraphVizChart]").first.wait_for()
    answered = time.perf_counter() - picked
    return Run("why", 0, ready, answered, heading.inner_text())


#: The flows by name.
FLOWS: dict[str, Callable[..., Run]] = {"overview": overview, "what_if": what_if, "why": why}


def bytecode_env(cache: Path) -> dict[str, str]:
    """The servers' environment for compiled modules kept under ``cache``, as an installed
    Python has them (a fresh process that compiles pandas, plotly and Streamlit from source
    spends seconds on it: ``PYTHONDONTWRITEBYTECODE`` without ``.pyc`` files).

    >>> sorted(bytecode_env(Path("/tmp/pyc")).items())
    [('PYTHONDONTWRITEBYTECODE', ''), ('PYTHONPYCACHEPREFIX', '/tmp/pyc')]
    """
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(cache)}


def run_flows(lake: Path, command_for: Command, flows: list[str], runs: int,
              settle_s: float = 0.0, env: dict[str, str] | None = None, prime: bool = True,
              report: Callable[[Run], None] | None = None, **options: Any) -> list[Run]:
    """Each flow ``runs`` times, each time on a fresh server, ``settle_s`` after its health
    check answered (0: at once, while the server's warm-up runs). ``prime``: one run of each
    flow first, not counted (it writes the compiled modules when ``env`` keeps them, see
    :func:`bytecode_env`); ``report`` is called with each counted run as it ends. ``options``
    go to the flows (``pair``, ``view``, ``link``)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SetupError("no system chromium: run infra/install.sh")
    done: list[Run] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            for name in flows:
                for number in range(0 if prime else 1, runs + 1):
                    with served(lake, command_for, env) as (url, _):
                        time.sleep(settle_s)
                        page = browser.new_page(viewport={"width": 1400, "height": 1000})
                        page.set_default_timeout(STEP_TIMEOUT_MS)
                        run = FLOWS[name](page, url, **options)
                        page.close()
                    if number:
                        done.append(Run(name, number, run.ready_s, run.answer_s, run.seen))
                        if report is not None:
                            report(done[-1])
        finally:
            browser.close()
    return done
