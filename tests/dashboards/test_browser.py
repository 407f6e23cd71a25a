"""The dashboard in a real headless Chromium: ``streamlit run`` on 127.0.0.1, the What-if page,
a deep link to the Why page as a fresh server's first request, and the three flows the
dashboard benchmark times (:mod:`aspen.bench.dashboard`: Overview, What if, Why), each checked
by what the operator reads.

Needs the Debian ``chromium`` (``infra/install.sh`` installs it) and the ``playwright`` package;
Playwright never downloads its own browsers here. The lake is ``provenance_lake`` of the
Why/What-if tests (links a→b, b→c, a→c); it is passed after ``--`` exactly as ``aspen dashboard``
passes it. A screenshot goes to ``tests/artifacts/`` (ignored by git).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_apptest import commit_views
from playwright import sync_api
from test_dashboard_provenance_pages import provenance_lake  # noqa: F401  (fixture)

from aspen.cli.dashboard import app_path, streamlit_command
from aspen.settings import Settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
#: Generous waits for a shared 2-core machine (not assertions about speed).
START_TIMEOUT_S = 120.0
STEP_TIMEOUT_MS = 90_000
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    """The system Chromium (``make setup`` installs it: a missing one fails, with the fix)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found is not None, "no system chromium: run make setup (apt-get install chromium)"
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll Streamlit's ``/_stcore/health`` until it answers ``ok``."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"streamlit exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as reply:
                if reply.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"streamlit did not answer within {START_TIMEOUT_S:.0f} s:\n"
                f"{log.read_text()[-3000:]}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """End the streamlit process group this test started (TERM, then KILL)."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


@pytest.fixture
def dashboard_url(provenance_lake: Path, tmp_path: Path) -> Iterator[str]:  # noqa: F811
    """``streamlit run dashboards/app.py`` on a free port of 127.0.0.1, stopped afterwards."""
    port = free_port()
    command = streamlit_command(app_path(), Settings(lake=str(provenance_lake)).lake_uri, port)
    log = tmp_path / "streamlit.log"
    env = {k: v for k, v in os.environ.items() if k != "ASPEN_LAKE"}  # the lake comes from --lake
    cwd = tmp_path / "cwd"  # whose ./lakehouse (the default lake) does not exist
    cwd.mkdir()
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                   cwd=cwd, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, log)
        yield url
    finally:
        stop(process)
    assert process.poll() is not None


def test_what_if_in_a_real_browser_shows_the_lost_tuples(dashboard_url: str) -> None:
    """The first Simulate of the first tab on a fresh server: the server's warming thread (or
    the page, behind a spinner) decodes the provenance once, and the answer stays."""
    executable = chromium_path()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(STEP_TIMEOUT_MS)
            page.goto(dashboard_url, wait_until="domcontentloaded")
            page.get_by_role("heading", name="Overview").wait_for()
            page.get_by_test_id("stSidebarNav").get_by_role("link", name="What if").click()
            page.get_by_role("heading", name="What if").wait_for()

            links = page.get_by_test_id("stMultiSelect").first
            links.click()
            page.get_by_role("option", name="b → c (2 ms)").click()
            page.keyboard.press("Escape")
            page.get_by_role("button", name="Simulate").click()

            # the answer in network terms: (b, c) loses its only route; (a, c) keeps a → c
            answer = "1 of 3 pairs disconnected (33.3 %)"
            page.get_by_text(answer).wait_for()
            disconnected = page.get_by_test_id("stMetric").first.inner_text()
            grids = page.get_by_test_id("stDataFrame")
            grids.first.wait_for()  # per domain
            page.wait_for_timeout(1000)  # let the grid draw before the screenshot
            page.screenshot(path=str(ARTIFACTS / "what_if.png"), full_page=True)
            # the grid draws on a canvas; its cells are mirrored in a hidden accessible table
            cells = grids.first.locator("[role=gridcell]").all_text_contents()
            caption = page.get_by_text("nothing is recomputed or written").inner_text()

            # the answer stays while the operator changes the selection
            links.click()
            page.get_by_role("option", name="a → c (5 ms)").click()
            page.keyboard.press("Escape")
            page.get_by_text("The selection changed since this answer").wait_for()
            kept = page.get_by_text(answer)
            kept.wait_for()  # the rerun after the change draws the kept answer again
            still = kept.count()
        finally:
            browser.close()
    assert "Pairs disconnected" in disconnected and "1 of 3 (33.3 %)" in disconnected
    # domain, routers isolated, pairs disconnected, pairs rerouted: b and c each lose (b, c)
    assert [c.strip() for c in cells if c.strip()] == ["b", "0", "1", "0", "c", "0", "1", "0"]
    assert "answered in" in caption and "stored provenance" in caption
    assert still == 1
    assert (ARTIFACTS / "what_if.png").stat().st_size > 10_000


def test_a_deep_link_as_the_first_request_reads_the_served_lake(dashboard_url: str) -> None:
    """A fresh server's first request is ``/why``: Streamlit runs that page without ``app.py``
    (there is a ``pages/`` folder), and the page still reads the ``--lake`` it was started with."""
    executable = chromium_path()
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(STEP_TIMEOUT_MS)
            page.goto(f"{dashboard_url}/why", wait_until="domcontentloaded")
            page.get_by_role("heading", name="Why", exact=True).wait_for()
            page.get_by_test_id("stSelectbox").first.wait_for()  # the lake's views to choose
            alerts = page.get_by_test_id("stAlert").all_inner_texts()
        finally:
            browser.close()
    assert not any("No provenance yet" in text for text in alerts), alerts


def test_an_open_page_shows_a_new_batch_without_a_reload(
    dashboard_url: str, provenance_lake: Path  # noqa: F811
) -> None:
    """The Overview open in a tab moves from batch 1 to batch 2 when a batch commits: the
    page polls the lake's Delta versions and redraws itself."""
    executable = chromium_path()
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(STEP_TIMEOUT_MS)
            page.goto(dashboard_url, wait_until="domcontentloaded")
            tile = page.get_by_test_id("stMetric").filter(has_text="Views current as of")
            tile.filter(has_text="batch 1").wait_for()
            commit_views(str(provenance_lake))  # a second committed batch
            tile.filter(has_text="batch 2").wait_for()
            refreshed = tile.inner_text()
        finally:
            browser.close()
    assert "batch 2" in refreshed


def test_ask_an_example_question_and_open_a_rows_provenance(dashboard_url: str) -> None:
    """Ask (SQL): an example question's button runs it in process, and the first row of the
    answer opens with its formula and witnesses in words."""
    executable = chromium_path()
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(STEP_TIMEOUT_MS)
            page.goto(f"{dashboard_url}/sql", wait_until="domcontentloaded")
            page.get_by_role("heading", name="Ask (SQL)").wait_for()
            page.get_by_role("button", name="Links out of routers that reach 2 or more nodes"
                             ).click()
            page.get_by_role("heading", name="What a row rests on").wait_for()
            rows = page.get_by_text("2 rows.").inner_text()
            page.get_by_text("minimal witness sets").wait_for()
            formula = page.get_by_test_id("stCode").first.inner_text()
            critical = page.get_by_test_id("stMarkdown").filter(
                has_text="Deleting any one of these removes the row").inner_text()
            page.screenshot(path=str(ARTIFACTS / "sql.png"), full_page=True)
        finally:
            browser.close()
    # a → b is there while a reaches 2 nodes: over a → c, or over b → c
    assert rows == "2 rows."
    assert formula.strip() == "(link:a:b ∧ link:a:c) ∨ (link:a:b ∧ link:b:c)"
    assert "link a → b" in critical


def test_the_three_first_answers_as_the_benchmark_times_them(dashboard_url: str) -> None:
    """The flows ``benchmarks/dashboard.py`` times (:mod:`aspen.bench.dashboard`), on one
    server: the Overview's tiles, a link's What-if answer and a pair's witnesses drawn, each
    read as the operator sees it (the benchmark's selectors stay true with the pages)."""
    from aspen.bench.dashboard import overview, what_if, why

    executable = chromium_path()
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            seen = {}
            for name, flow, options in (
                ("overview", overview, {}),
                ("what_if", what_if, {"link": "b → c"}),
                ("why", why, {"pair": ("a", "c")}),
            ):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(STEP_TIMEOUT_MS)
                seen[name] = flow(page, dashboard_url, **options).seen
                if name == "why":
                    cells = page.get_by_test_id("stDataFrame").first.locator(
                        "[role=gridcell]").all_text_contents()
                    critical = page.get_by_text("No single lost link removes").inner_text()
                page.close()
        finally:
            browser.close()
    # this lake's registry has no column of deaths: the pipeline's tiles, not the network's
    assert "Views current as of" in seen["overview"] and "batch 1" in seen["overview"]
    assert "Pairs disconnected" in seen["what_if"] and "1 of 3 (33.3 %)" in seen["what_if"]
    assert seen["why"] == "Why can a reach c?"
    # witness, route, links, size: over a → c alone, or over b
    assert {"a → c", "a → b → c"} <= {c.strip() for c in cells}
    assert "the pair" in critical
