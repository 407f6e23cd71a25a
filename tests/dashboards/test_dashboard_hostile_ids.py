"""Lake data renders as text on every page: ids that are Markdown, HTML, math or a link stay
inert, and every page reads the lake the server was started with, even when opened first.

The lake (written with delta-rs, no Spark) names its nodes, sensors, regions and quarantine
reasons with :data:`HOSTILE` strings and holds a broken table whose folder name is Markdown.
Each rendered Markdown value (captions, messages, headings, metric labels and values) is
rendered again with markdown-it (CommonMark, with GFM's bare-URL links) and must produce no
link, emphasis or markup outside code spans; the hostile text itself appears inside code spans.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import commit_views, open_page
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from aspen.cli.dashboard import app_path
from aspen.lake.deltars import write_table
from aspen.pipeline.view_tables import view_frame
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
import lakeview  # noqa: E402

LINK, BOLD, TAG, TICK, MATH = (
    "[click](http://evil.example/)", "**bold**", "<b>x</b>", "`tick`", "$x$")
HOSTILE = (LINK, BOLD, TAG, TICK, MATH)
#: A table folder that delta-rs cannot read, named in Markdown (no slash: it is one folder).
BROKEN_TABLE = "**broken**`$y$`"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
#: Markdown as Streamlit's renderer reads it: CommonMark, GFM tables and strikethrough, bare
#: URLs turned into links, no raw HTML.
MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": True}).enable(
    ["linkify", "strikethrough", "table"])
#: Outside code spans, a trace of a hostile id: its link (href or text), its bold text, or its
#: raw text (the page's own bold labels are fine).
MARKUP = re.compile(r"evil\.example|click</a>|<strong>bold</strong>|\*\*bold\*\*|&lt;b&gt;|"
                    r"\$x\$|`tick`")
_CODE = re.compile(r"<code>.*?</code>", re.S)


# -- the lake -------------------------------------------------------------------------------


def _frame(rows: list[tuple[str, str, list[object]]]) -> pd.DataFrame:
    """The ``variables`` registry of live instances ``(var, relation, values)``."""
    return pd.DataFrame({
        "var": [var for var, *_ in rows],
        "relation": [relation for _, relation, _ in rows],
        "key": [json.dumps(values[:2] if relation in ("link", "region_seed") else values[:1])
                for _, relation, values in rows],
        "values": [json.dumps(values) for *_, values in rows],
        "inserted_batch": [1] * len(rows),
        "deleted_batch": pd.array([None] * len(rows), dtype="Int64"),
        "expires_at": pd.Series([None] * len(rows), dtype="datetime64[us, UTC]"),
        "death": pd.array([None] * len(rows), dtype="string"),
    })


def _instances(frame: pd.DataFrame, variables: list[str]) -> pd.DataFrame:
    return frame.assign(var=variables, inserted_at=NOW,
                        expires_at=pd.Series([None] * len(frame), dtype="datetime64[us, UTC]"),
                        batch_id=1, seq=range(len(frame)))


def _write_hostile_lake(root: Path) -> None:
    """Links LINK→BOLD→TAG and LINK→TAG; sensors TICK (the seed of region LINK) and MATH, both
    triggered; a quarantined record whose reason is BOLD; a broken table BROKEN_TABLE."""
    settings = Settings(lake=str(root))
    links = [("l1", LINK, BOLD, 1.0), ("l2", BOLD, TAG, 1.0), ("l3", LINK, TAG, 5.0)]
    sensors = [("s1", TICK, 0.0, 0.0), ("s2", MATH, 5.0, 0.0)]
    registry = [(var, "link", [src, dst, cost]) for var, src, dst, cost in links]
    registry += [(var, "sensor", [i, x, y]) for var, i, x, y in sensors]
    registry += [(f"t{var}", "triggered", [i]) for var, i, *_ in sensors]
    registry += [("r1", "region_seed", [LINK, TICK])]
    write_table(settings, "variables", _frame(registry))
    write_table(settings, "link", _instances(pd.DataFrame(
        {"src": [r[1] for r in links], "dst": [r[2] for r in links],
         "cost": [r[3] for r in links]}), [r[0] for r in links]))
    write_table(settings, "sensor", _instances(pd.DataFrame(
        {"id": [s[1] for s in sensors], "x": [s[2] for s in sensors],
         "y": [s[3] for s in sensors]}), [s[0] for s in sensors]))
    write_table(settings, "triggered", _instances(pd.DataFrame(
        {"id": [s[1] for s in sensors]}), [f"t{s[0]}" for s in sensors]))
    write_table(settings, "quarantine", pd.DataFrame({
        "batch_id": [1], "source": [TAG], "line": [1], "raw": [LINK], "reason": [BOLD],
        "ingested_at": [NOW]}))

    manager = ProvenanceManager()
    l1, l2, l3 = (manager.var(v) for v in ("l1", "l2", "l3"))
    reachable = {(LINK, BOLD): l1, (BOLD, TAG): l2, (LINK, TAG): manager.or_(l3, manager.and_(
        l1, l2))}
    write_table(settings, "reachable", view_frame("reachable", reachable, manager, batch_id=1))

    def alive(var: str) -> object:
        return manager.and_(manager.var(var), manager.var(f"t{var}"))

    seed = manager.and_(manager.var("r1"), alive("s1"))
    regions = {(LINK, TICK): seed, (LINK, MATH): manager.and_(seed, alive("s2"))}
    write_table(settings, "active_region",
                view_frame("active_region", regions, manager, batch_id=1))
    commit_views(settings.lake)
    broken = root / BROKEN_TABLE / "_delta_log"
    broken.mkdir(parents=True)
    (broken / "00000000000000000000.json").write_text("not a delta log\n")


@pytest.fixture
def hostile_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hostile-lake"
    _write_hostile_lake(root)
    monkeypatch.setenv("ASPEN_LAKE", str(root))
    return root


# -- what a page rendered ---------------------------------------------------------------------


def _markdown_values(app: AppTest) -> Iterator[str]:
    """Every value on the page (main area and sidebar) that Streamlit renders as Markdown."""
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "title",
                 "header", "subheader"):
        for element in getattr(app, kind):
            yield str(element.value)
    for metric in app.metric:
        yield str(metric.label)
        yield str(metric.value)


def _inert(app: AppTest) -> str:
    """The page's Markdown rendered to HTML, after checking that outside code spans no hostile
    id became markup or shows its raw text."""
    rendered = []
    for value in _markdown_values(app):
        page_html = MARKDOWN.render(value)
        outside = _CODE.sub("", page_html)
        assert not MARKUP.search(outside), f"{value!r} renders as {page_html!r}"
        rendered.append(page_html)
    return "\n".join(rendered)


def _in_code(page_html: str, value: str) -> bool:
    """Whether ``value`` is the whole text of a code span in ``page_html``."""
    return f"<code>{html.escape(value, quote=False)}</code>" in page_html


def test_markdown_checker_catches_what_an_unescaped_id_would_do() -> None:
    """The check itself: raw ids are links and markup, :func:`lakeview.text` makes them code."""
    def safe(page_html: str, raw: str) -> bool:
        return not MARKUP.search(_CODE.sub("", page_html)) and _in_code(page_html, raw)

    for raw in HOSTILE:
        assert not safe(MARKDOWN.render(f"id {raw}"), raw)  # `tick` shows as code "tick"
        assert safe(MARKDOWN.render(f"id {lakeview.text(raw)}"), raw)
    assert "<a " in MARKDOWN.render("http://evil.example/")  # a bare URL is a link too


# -- the pages --------------------------------------------------------------------------------


def test_internals_names_the_broken_table_as_text(hostile_lake: Path) -> None:
    app = open_page("pages/internals.py")
    page_html = _inert(app)
    assert any(BROKEN_TABLE in w.value for w in app.warning)
    assert _in_code(page_html, BROKEN_TABLE)


def test_overview_counts_the_broken_table_without_naming_it(hostile_lake: Path) -> None:
    app = open_page()
    page_html = _inert(app)
    assert "- 1 table cannot be read (see Internals)" in app.warning[0].value.splitlines()
    assert "broken" not in page_html


def test_sidebar_names_the_lake_not_its_path(hostile_lake: Path) -> None:
    app = open_page()
    (caption,) = [c.value for c in app.sidebar.caption if c.value.startswith("Lake:")]
    assert caption == "Lake: `hostile-lake` (read-only)"
    assert str(hostile_lake.parent) not in "\n".join(_markdown_values(app))


def _map_texts(app: AppTest) -> list[str]:
    """Every hover text, label and trace name on the network map."""
    (chart,) = app.get("plotly_chart")
    texts = []
    for trace in json.loads(chart.proto.spec)["data"]:
        texts.append(str(trace.get("name", "")))
        for field in ("hovertext", "text"):
            texts += [str(v) for v in trace.get(field) or []]
    return texts


def test_network_page_is_inert(hostile_lake: Path) -> None:
    app = open_page("pages/network.py")
    _inert(app)
    assert set(app.selectbox(key="network_focus").options) >= {LINK, BOLD, TAG}  # plain text
    texts = _map_texts(app)
    # plotly reads a subset of HTML in its texts: the ids are escaped, not markup
    assert "[click](http://evil.example/) → **bold**, 1 ms" in "\n".join(texts)
    assert "**bold** → &lt;b&gt;x&lt;/b&gt;, 1 ms" in "\n".join(texts)
    assert not any(TAG in t for t in texts)
    # the search, the focus, a click and a shared overlay name ids in Markdown: as code
    app.text_input(key="network_search").input("[no](http://evil.example/)").run()
    assert _in_code(_inert(app), "[no](http://evil.example/)")  # "No node id contains …"
    app.text_input(key="network_search").input("<B>").run()
    app.selectbox(key="network_focus").select(TAG).run()
    app.session_state["network_clicked"] = {"points": [{"customdata": ["link", LINK, TAG]}]}
    app.session_state["map_overlay"] = {"kind": "path", "label": MATH, "nodes": [LINK, TICK]}
    app.run()
    assert not app.exception, app.exception
    page_html = _inert(app)
    assert _in_code(page_html, TAG) and _in_code(page_html, MATH)
    assert any(s.value.startswith("Link ") for s in app.subheader)
    app.session_state["map_overlay"] = {"kind": "losses", "label": BOLD, "links": [(LINK, TAG)]}
    app.session_state["network_clicked"] = {"points": [{"customdata": ["node", TICK]}]}
    app.run()
    assert not app.exception, app.exception
    _inert(app)


def test_quarantine_page_is_inert(hostile_lake: Path) -> None:
    app = open_page("pages/quarantine.py")
    _inert(app)
    assert app.multiselect[0].options == [BOLD]


def test_why_page_shows_hostile_link_ids_as_text(hostile_lake: Path) -> None:
    app = open_page("pages/why.py")
    assert app.selectbox[0].options == ["Reachable pair", "Region member"]
    app.selectbox[1].select(LINK).run()
    app.selectbox[2].select(BOLD).run()
    assert not app.exception, app.exception
    page_html = _inert(app)
    assert _in_code(page_html, LINK) and _in_code(page_html, BOLD)  # heading, critical link
    assert any(m.value.startswith("**Losing any of these links") for m in app.markdown)


def test_why_not_page_shows_hostile_link_ids_as_text(hostile_lake: Path) -> None:
    app = open_page("pages/why.py")
    app.selectbox[1].select(TAG).run()  # TAG reaches nothing: why not
    app.selectbox[2].select(LINK).run()
    assert not app.exception, app.exception
    page_html = _inert(app)
    assert _in_code(page_html, TAG) and _in_code(page_html, LINK)
    assert any("missing links would connect them" in m.value for m in app.markdown)


def test_why_page_shows_hostile_region_ids_as_text(hostile_lake: Path) -> None:
    app = open_page("pages/why.py")
    app.selectbox[0].select("active_region").run()
    app.selectbox[1].select(LINK).run()
    app.selectbox[2].select(MATH).run()
    assert not app.exception, app.exception
    page_html = _inert(app)
    assert _in_code(page_html, TICK) and _in_code(page_html, MATH)  # the critical sensors
    assert _in_code(page_html, f"region_seed({LINK},{TICK})")


def test_what_if_page_shows_a_hostile_region_gone_as_text(hostile_lake: Path) -> None:
    app = open_page("pages/what_if.py")
    app.multiselect(key="whatif_sensors").set_value([TICK]).run()
    app.button[0].click().run()
    assert not app.exception, app.exception
    page_html = _inert(app)
    assert any("gone entirely" in m.value for m in app.markdown)
    assert _in_code(page_html, LINK)  # the region


@pytest.mark.parametrize("page", ["pages/views.py", "pages/health.py", "pages/queries.py"])
def test_other_pages_are_inert(hostile_lake: Path, page: str) -> None:
    _inert(open_page(page))


# -- the lake of a page opened first ------------------------------------------------------------


def _open_page_alone(page: str) -> AppTest:
    """Run ``page`` the way Streamlit runs a deep link's page on a fresh server (the folder
    ``pages/`` beside ``app.py``): the page script alone, ``app.py`` never ran."""
    app = AppTest.from_file(str(app_path().parent / page), default_timeout=60).run()
    assert not app.exception, app.exception
    return app


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory whose ``./lakehouse`` is a different, empty lake."""
    cwd = tmp_path / "cwd"
    (cwd / "lakehouse").mkdir(parents=True)
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("ASPEN_LAKE", raising=False)
    return cwd


def test_a_page_opened_first_reads_the_lake_after_the_double_dash(
    hostile_lake: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `streamlit run app.py -- --lake L` leaves sys.argv = [app.py, --lake, L] in the server
    monkeypatch.setattr(sys, "argv", [str(app_path()), "--lake", str(hostile_lake)])
    app = _open_page_alone("pages/why.py")
    assert not app.info  # not "No provenance yet" (./lakehouse)
    assert app.selectbox[0].options == ["Reachable pair", "Region member"]


def test_a_page_opened_first_reads_the_lake_aspen_dashboard_exports(
    hostile_lake: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aspen.cli.dashboard import server_environment

    monkeypatch.setattr(sys, "argv", [str(app_path())])
    environment = server_environment(Settings(lake=str(hostile_lake)))
    monkeypatch.setenv("ASPEN_LAKE", environment["ASPEN_LAKE"])
    for page in ("pages/why.py", "pages/network.py", "pages/quarantine.py"):
        app = _open_page_alone(page)
        assert not app.info, (page, [i.value for i in app.info])
