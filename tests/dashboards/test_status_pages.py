"""AppTest of the status pages — Overview, Internals, Pipeline health, Quarantine — and of the
app's refresh when the lake moves, on a small lake written with delta-rs (no Spark).

The lake has four committed batches, the last one slow (94 s after batches of 1–2 s), a fifth
ingest batch not applied yet (20 minutes old), expectation results of batch 3 only (stale), a
link and a sensor that died in batch 4, quarantined records with reason codes from an hour ago,
and a summary published before the last batch committed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import open_page
from streamlit.testing.v1 import AppTest

from aspen.cli.dashboard import app_path
from aspen.lake.deltars import write_table
from aspen.settings import Settings

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
import lakewatch  # noqa: E402

WALL = {1: 2.0, 2: 1.0, 3: 1.5, 4: 94.0}
#: Names of the lake's tables: none may show on the Overview.
INTERNAL_NAMES = ("ledger", "ingest_files", "apply_state", "expectation_results", "variables",
                  "metrics", "summary", "quarantine`", "table_versions")


def ago(minutes: float) -> pd.Timestamp:
    """``minutes`` before now, taken when the lake is written: the page reads it seconds later,
    so its ages in whole minutes are the ones written."""
    return pd.Timestamp.now(tz="UTC").floor("s") - pd.Timedelta(minutes=minutes)


def _ledger() -> pd.DataFrame:
    return pd.DataFrame({
        "batch_id": list(WALL),
        "through_ingest_batch": list(WALL),
        "runtime": ["local"] * 4,
        "partitions": [2] * 4,
        "mode": ["lazy"] * 4,
        "table_versions": [json.dumps({})] * 4,
        "updates_in": [40, 3, 2, 1],
        "view_changes_out": [90, 4, 2, 1],
        "committed_at": [ago(60 - b) for b in WALL],  # batch 4: 56 minutes ago
    })


def _metrics() -> pd.DataFrame:
    rows = [(b, -1, "wall_seconds", wall) for b, wall in WALL.items()]
    rows += [(b, -1, "messages", 100.0 * b) for b in WALL]  # the local runtime's running total
    rows += [(b, -1, "state_bytes", 0.0) for b in WALL]  # never measured: all zero
    return pd.DataFrame(rows, columns=["batch_id", "node", "metric", "value"])


def _ingest_files() -> pd.DataFrame:
    batches = [1, 2, 3, 4, 5]
    return pd.DataFrame({
        "source": [f"day{b}.jsonl" for b in batches],
        "batch_id": batches,
        "valid": [40, 3, 2, 1, 3],
        "ingested_at": [ago(62 - b) for b in batches[:4]] + [ago(20)],
    })


def _variables() -> pd.DataFrame:
    rows = [  # relation, key, values, inserted batch, deleted batch, death
        ("link", '["a","b"]', '["a","b",1.0]', 1, None, None),
        ("link", '["b","c"]', '["b","c",2.0]', 1, 4, "deleted"),
        ("sensor", '["s1"]', '["s1",0.0,0.0]', 1, 4, "expired"),
        ("sensor", '["s2"]', '["s2",5.0,0.0]', 2, None, None),
    ]
    return pd.DataFrame({
        "var": [f"v{i}" for i in range(len(rows))],
        "relation": [r[0] for r in rows],
        "key": [r[1] for r in rows],
        "values": [r[2] for r in rows],
        "inserted_batch": [r[3] for r in rows],
        "deleted_batch": pd.array([r[4] for r in rows], dtype="Int64"),
        "death": pd.array([r[5] for r in rows], dtype="string"),
    })


def _results(failing: bool = False) -> pd.DataFrame:
    rows = [
        (3, "links", "link", "expect_column_values_to_not_be_null(src)", True,
         '{"unexpected_count": 0, "element_count": 3}'),
        (3, "links", "link", "expect_column_values_to_be_between(cost)", not failing, "min 1.0"),
    ]
    frame = pd.DataFrame(rows, columns=["batch_id", "suite", "table", "expectation", "success",
                                        "observed"])
    return frame.assign(checked_at=ago(57))


def _quarantine(count: int = 3) -> pd.DataFrame:
    codes = ["bad_ts", "duplicate", None]
    return pd.DataFrame({
        "batch_id": [4] * count,
        "source": ["day4.jsonl"] * count,
        "line": list(range(1, count + 1)),
        "raw": [f'{{"line": {n}}}' for n in range(1, count + 1)],
        "reason": [f"line {n}: " + ("odd value" if codes[n % 3] is None else "bad")
                   for n in range(1, count + 1)],
        "code": [codes[n % 3] for n in range(1, count + 1)],
        "ingested_at": [ago(58)] * count,
    })


def _summary() -> pd.DataFrame:
    return pd.DataFrame({"name": ["link"], "version": [0], "row_count": [2],
                         "published_at": [ago(59)]})  # before batch 4 committed


def write_status_lake(root: Path) -> Settings:
    settings = Settings(lake=str(root))
    write_table(settings, "ledger", _ledger())
    write_table(settings, "metrics", _metrics())
    write_table(settings, "ingest_files", _ingest_files())
    write_table(settings, "apply_state", pd.DataFrame({"batch_id": [1, 2, 3, 4]}))
    write_table(settings, "variables", _variables())
    write_table(settings, "expectation_results", _results())
    write_table(settings, "quarantine", _quarantine())
    write_table(settings, "summary", _summary())
    return settings


@pytest.fixture
def status_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "status-lake"
    write_status_lake(root)
    monkeypatch.setenv("ASPEN_LAKE", str(root))
    monkeypatch.delenv("ASPEN_DASHBOARD_REFRESH_S", raising=False)
    return root


def _markdown(app: AppTest) -> list[str]:
    """Every Markdown value of the page's main area."""
    values = [str(e.value) for kind in ("title", "subheader", "markdown", "caption", "info",
                                        "warning", "error", "success") for e in getattr(app, kind)]
    return values + [f"{m.label} {m.value}" for m in app.metric]


#: The pipeline light's headlines (the network light comes first, with headlines of its own).
PIPELINE_HEADLINES = ("**Red: needs attention now**", "**Amber: worth a look**",
                      "**Green: all is well**")


def _pipeline_banners(app: AppTest, kind: str) -> list[object]:
    """The banners of ``kind`` (``error``, ``warning``, ``success``) of the pipeline light."""
    return [b for b in getattr(app, kind) if b.value.startswith(PIPELINE_HEADLINES)]


def _metrics_shown(app: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in app.metric}


# -- Overview ---------------------------------------------------------------------------------


def test_overview_is_a_light_with_reasons_then_tiles(status_lake: Path) -> None:
    app = open_page()
    assert app.title[0].value == "Overview"
    (banner,) = _pipeline_banners(app, "warning")
    assert banner.value.splitlines() == [
        "**Amber: worth a look**",
        "",
        "- 3 updates in 1 ingest batch waiting, the oldest for 20 min",
        "- the last maintained batch (4) took 94 s, over 3× the median 1.5 s of the batches "
        "before it",
        "- the expectations were last checked on maintained batch 3; the views are at maintained "
        "batch 4",
        "- 3 records quarantined in the last 24 h",
    ]
    assert not _pipeline_banners(app, "error") and not _pipeline_banners(app, "success")
    assert {k: v for k, v in _metrics_shown(app).items() if k in {
        "Views current as of", "Waiting to be maintained", "Maintained batch 4 took",
        "Expectations", "Quarantined, last 24 h", "Gone, last 24 h"}} == {
        "Views current as of": "maintained batch 4",
        "Waiting to be maintained": "3 updates",
        "Maintained batch 4 took": "94 s",
        "Expectations": "all passed",
        "Quarantined, last 24 h": "3",
        "Gone, last 24 h": "1 link, 1 sensor",
    }
    captions = [c.value for c in app.caption]
    assert any(c.startswith("Committed 56 min ago") for c in captions)
    assert any(":red[Slow: the last maintained batch (4) took 94 s" in c for c in captions)
    assert any(c == "2 checked, on maintained batch 3. :orange[Stale: not checked since maintained "
                   "batch 4 committed.]"
               for c in captions)
    assert any(c.startswith("By reason: `bad_ts` 1 · `duplicate` 1 · `odd value` 1.")
               for c in captions)
    assert any(c.startswith("`b → c` deleted in ingest batch 4 · `s1` expired in ingest "
                            "batch 4.") for c in captions)
    links = app.get("page_link")  # the network light's evidence, then the details
    assert [link.proto.page for link in links] == ["network", "what_if", "why", "health",
                                                   "quarantine", "network", "internals"]
    assert all(link.proto.page_script_hash for link in links)  # registered pages


def test_overview_shows_no_internal_name_json_or_tuple(status_lake: Path) -> None:
    app = open_page()
    shown = "\n".join(_markdown(app))
    for name in INTERNAL_NAMES:
        assert name not in shown, name
    assert "{" not in shown and "('" not in shown and "Rows" not in shown
    assert not app.dataframe  # the table list is on the Internals page


def test_overview_is_red_when_an_expectation_fails(status_lake: Path) -> None:
    write_table(Settings(lake=str(status_lake)), "expectation_results",
                _results(failing=True).assign(batch_id=4))
    app = open_page()
    (banner,) = _pipeline_banners(app, "error")
    assert banner.value.splitlines()[:3] == [
        "**Red: needs attention now**", "", "- 1 of 2 expectations failed (maintained batch 4)"]
    assert _metrics_shown(app)["Expectations"] == "1 failed"
    assert any("Failed: `expect_column_values_to_be_between(cost)`." in c.value
               for c in app.caption)


def test_overview_is_green_when_all_is_well(status_lake: Path) -> None:
    settings = Settings(lake=str(status_lake))
    write_table(settings, "ingest_files", _ingest_files().iloc[:4])
    write_table(settings, "metrics", _metrics().assign(
        value=lambda f: f["value"].where(f["metric"] != "wall_seconds", 1.0)))
    write_table(settings, "expectation_results", _results().assign(batch_id=4))
    write_table(settings, "quarantine", _quarantine().assign(ingested_at=ago(3000)))
    app = open_page()
    (banner,) = _pipeline_banners(app, "success")
    assert banner.value == ("**Green: all is well** — views current as of maintained batch 4 "
                            "(through ingest batch 4), committed 56 min ago; nothing waiting; "
                            "all 2 expectations passed (maintained batch 4).")
    assert _metrics_shown(app)["Waiting to be maintained"] == "nothing"
    assert _metrics_shown(app)["Quarantined, last 24 h"] == "0"


def test_overview_of_a_lake_never_maintained(status_lake: Path) -> None:
    import shutil

    for name in ("ledger", "metrics", "expectation_results"):
        shutil.rmtree(status_lake / name)
    app = open_page()
    assert not app.exception
    (banner,) = _pipeline_banners(app, "error")  # red: every ingest batch waited over an hour
    assert "- no batch has been maintained yet" in banner.value.splitlines()
    assert _metrics_shown(app)["Views current as of"] == "no batch yet"
    assert _metrics_shown(app)["Expectations"] == "not checked yet"


def test_overview_opened_alone_names_the_detail_pages(status_lake: Path) -> None:
    app = AppTest.from_file(str(app_path().parent / "pages" / "overview.py"),
                            default_timeout=60).run()
    assert not app.exception, app.exception
    assert not app.get("page_link")
    assert any(c.value.startswith("Pipeline health:") for c in app.caption)


# -- Internals --------------------------------------------------------------------------------


def test_internals_lists_every_table_and_marks_a_stale_summary(status_lake: Path) -> None:
    app = open_page("pages/internals.py")
    assert app.title[0].value == "Internals"
    tables = app.dataframe[0].value.set_index("table")
    assert list(tables.columns) == ["Delta version", "rows", "last commit", "problem"]
    assert tables.loc["ledger", "rows"] == 4 and tables.loc["quarantine", "rows"] == 3
    positions = app.dataframe[1].value.set_index("position")["batch"].to_dict()
    assert positions["last ingest batch (ingest_files)"] == "5"
    assert positions["last applied ingest batch (apply_state)"] == "4"
    assert positions["last committed batch (ledger)"] == "4"
    assert any("Stale: published before batch 4 committed" in c.value for c in app.caption)
    assert list(app.dataframe[2].value["table"]) == ["link"]


# -- Pipeline health ------------------------------------------------------------------------------


def test_health_flags_the_slow_batch_in_the_table_and_the_chart(status_lake: Path) -> None:
    app = open_page("pages/health.py")
    assert app.warning[0].value == "1 slow batch(es): 4 (94 s)."
    every = next(d.value for d in app.dataframe if "through ingest batch" in d.value.columns)
    assert every.set_index("batch")["slow"].to_dict() == {1: False, 2: False, 3: False, 4: True}
    assert "table_versions" not in every.columns and "batch_id" not in every.columns
    specs = [c.proto.spec for c in app.get("vega_lite_chart")]
    (wall_chart,) = [s for s in specs if '"speed"' in s]
    assert '"slow"' in wall_chart and "#E45756" in wall_chart


def test_health_charts_only_what_says_something(status_lake: Path) -> None:
    app = open_page("pages/health.py")
    specs = "\n".join(c.proto.spec for c in app.get("vega_lite_chart"))
    titles = [m.value for m in app.markdown]
    # state bytes all zero and the local runtime's running message total: not charted
    assert "**Operator state (bytes)**" not in titles
    assert "**Messages (rows) shipped between nodes per batch**" not in titles
    assert "**Updates in per batch**" in titles
    assert "messages" not in specs
    assert any("add up over batches" in c.value for c in app.caption)


def test_health_marks_stale_expectations_and_reads_observed(status_lake: Path) -> None:
    app = open_page("pages/health.py")
    assert app.success[0].value == "All 2 expectation(s) passed in batch 3."
    assert any(w.value.startswith("Stale: these results are of batch 3, before batch 4")
               for w in app.warning)
    results = next(d.value for d in app.dataframe if "expectation" in d.value.columns)
    assert list(results.columns) == ["passed", "stale", "suite", "table", "expectation",
                                     "observed", "batch", "checked at"]
    assert results["stale"].tolist() == [True, True]
    assert "unexpected_count: 0, element_count: 3" in results["observed"].tolist()


# -- Quarantine -----------------------------------------------------------------------------------


def test_quarantine_groups_by_reason_code_and_filters(status_lake: Path) -> None:
    app = open_page("pages/quarantine.py")
    by_reason = app.dataframe[0].value
    assert by_reason.values.tolist() == [
        ["bad_ts", 1, 4, "day4.jsonl line 3: bad", ""],
        ["duplicate", 1, 4, "day4.jsonl line 1: bad", ""],
        ["odd value", 1, 4, "day4.jsonl line 2: odd value", ""],
    ]
    app.multiselect[0].select("duplicate").run()
    records = app.dataframe[1].value
    assert list(records.columns) == ["batch", "file", "line", "reason", "message", "record",
                                     "ingested at"]
    assert records[["line", "reason", "message"]].values.tolist() == [[1, "duplicate", "bad"]]


def test_quarantine_pages_through_every_record_newest_first(status_lake: Path) -> None:
    settings = Settings(lake=str(status_lake))
    older = _quarantine(100).assign(batch_id=3, ingested_at=ago(300))
    write_table(settings, "quarantine", pd.concat([older, _quarantine(150)]))
    app = open_page("pages/quarantine.py")
    assert app.metric[0].value == "250"
    assert any(c.value == "Records 1–100 of 250, newest first." for c in app.caption)
    first = app.dataframe[1].value
    assert len(first) == 100 and set(first["batch"]) == {4}
    app.number_input(key="quarantine_page").set_value(3).run()
    last = app.dataframe[1].value
    assert any(c.value == "Records 201–250 of 250, newest first." for c in app.caption)
    assert len(last) == 50 and set(last["batch"]) == {3}
    app.multiselect[0].select("duplicate").run()  # fewer pages: back to the first
    assert not app.exception
    assert any(c.value.startswith("Records 1–84 of 84") for c in app.caption)


# -- refreshing when the lake moves ---------------------------------------------------------------


def test_the_app_reruns_only_after_a_new_commit(status_lake: Path) -> None:
    """The fragment's check (:func:`lakewatch.lake_moved`) against the fingerprint the app took
    when it drew the page. (AppTest runs a page alone on a rerun, since it forgets that
    ``st.navigation`` ran; a server does not, so a fresh run of the app stands for the rerun.)"""
    app = open_page()
    settings = Settings(lake=str(status_lake))
    drawn = app.session_state["aspen_lake_fingerprint"]
    assert ("quarantine", 0) in drawn
    assert not lakewatch.lake_moved(drawn, settings)  # nothing changed: no rerun, no flicker
    (note,) = [c.value for c in app.sidebar.caption if c.value.startswith("Updated")]
    assert note.endswith("UTC; checks the lake every 5 s")

    extra = _quarantine(1).assign(line=99, ingested_at=ago(0))
    write_table(settings, "quarantine", extra, mode="append")
    assert lakewatch.lake_moved(drawn, settings)  # the fragment's check: rerun the app
    app = open_page()

    assert _metrics_shown(app)["Quarantined, last 24 h"] == "4"
    redrawn = app.session_state["aspen_lake_fingerprint"]
    assert ("quarantine", 1) in redrawn and not lakewatch.lake_moved(redrawn, settings)


def test_the_refresh_can_be_turned_off(status_lake: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    monkeypatch.setenv("ASPEN_DASHBOARD_REFRESH_S", "0")
    app = open_page()
    (note,) = [c.value for c in app.sidebar.caption if c.value.startswith("Updated")]
    assert note.endswith(" UTC")
