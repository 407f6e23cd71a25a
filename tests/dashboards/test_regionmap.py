"""The sensor-region map, its tables and the paging of every dashboard table, on tiny literal
inputs: overlapping regions all visible, seeds, sensors in no region, scale, chains, losses,
hostile ids as plain text, and every row of a frame on exactly one page."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
from lakeview import NO_REGION  # noqa: E402
from paging import page_count, page_of  # noqa: E402
from regionmap import (  # noqa: E402
    REGION_COLOURS,
    plain,
    region_figure,
    region_table,
    sensor_table,
)

#: a, b, c in r1, r2 and r3 alike; d triggered in no region; e neither triggered nor in one.
PLACED = pd.DataFrame(
    [(s, x, 0.0, r, True) for s, x in (("a", 0.0), ("b", 10.0), ("c", 20.0))
     for r in ("r1", "r2", "r3")]
    + [("d", 30.0, 5.0, NO_REGION, True), ("e", 40.0, 5.0, NO_REGION, False)],
    columns=["sensor", "x", "y", "region", "triggered"],
)
SEEDS = pd.DataFrame({"region": ["r1", "r2", "r3", "r4"], "id": ["a", "a", "c", "gone"]})
NO_SEEDS = pd.DataFrame(columns=["region", "id"])
LINK, BOLD, TAG, MATH = "[click](http://evil.example/)", "**bold**", "<b>x</b>", "$x$"


def _traces(figure: object) -> dict[str, object]:
    return {trace.name: trace for trace in figure.data}  # type: ignore[attr-defined]


# -- the map --------------------------------------------------------------------------------


def test_three_regions_with_the_same_members_are_three_visible_ring_traces() -> None:
    traces = _traces(region_figure(PLACED, NO_SEEDS))
    rings = [traces[f"region {r} (3 sensors)"] for r in ("r1", "r2", "r3")]
    for ring in rings:
        assert list(ring.x) == [0.0, 10.0, 20.0] and list(ring.y) == [0.0, 0.0, 0.0]
        assert ring.marker.symbol == "circle-open"  # hollow: the inner rings show through
    assert [ring.marker.color for ring in rings] == list(REGION_COLOURS[:3])
    # at each sensor the three rings have three sizes: none covers another
    sizes = [list(ring.marker.size) for ring in rings]
    assert all(r1 < r2 < r3 for r1, r2, r3 in zip(*sizes, strict=True))
    assert sizes[0] == [sizes[0][0]] * 3


def test_a_sensors_rings_count_its_own_regions_from_the_centre() -> None:
    placed = pd.DataFrame({"sensor": ["a", "b", "b"], "x": [0.0, 1.0, 1.0], "y": [0.0] * 3,
                           "region": ["r2", "r1", "r2"], "triggered": [True] * 3})
    traces = _traces(region_figure(placed, NO_SEEDS))
    r1, r2 = traces["region r1 (1 sensor)"], traces["region r2 (2 sensors)"]
    (inner,) = r1.marker.size
    assert list(r2.marker.size) == [inner, r2.marker.size[1]] and r2.marker.size[1] > inner


def test_hover_lists_every_region_of_a_sensor_and_its_position() -> None:
    traces = _traces(region_figure(PLACED, SEEDS))
    hover = traces["triggered"].hovertext[1]
    assert hover == "sensor b<br>regions: r1, r2, r3<br>triggered: yes<br>x 10 m, y 0 m"
    assert traces["region r2 (3 sensors)"].hovertext[1] == hover  # the same on each ring
    assert traces["no region, not triggered"].hovertext == (
        "sensor e<br>regions: none<br>triggered: no<br>x 40 m, y 5 m",)


def test_seeds_are_stars_labelled_with_their_regions() -> None:
    figure = region_figure(PLACED, SEEDS)
    seed = _traces(figure)["seed"]
    assert seed.marker.symbol == "star"
    # a seeds r1 and r2, c seeds r3; the seed of r4 has no position and is left out
    assert (list(seed.x), list(seed.y)) == ([0.0, 20.0], [0.0, 0.0])
    assert seed.hovertext[0].endswith("<br>seed of: r1, r2")
    labels = [(a.x, a.y, a.text) for a in figure.layout.annotations]
    assert labels == [(0.0, 0.0, "r1, r2"), (20.0, 0.0, "r3")]
    # above the outermost of the sensor's three rings, not on them
    ring = max(_traces(figure)["region r3 (3 sensors)"].marker.size)
    assert all(a.yshift > ring / 2 for a in figure.layout.annotations)


def test_no_seed_table_draws_no_stars() -> None:
    figure = region_figure(PLACED, None)
    assert "seed" not in _traces(figure) and not figure.layout.annotations


def test_sensors_in_no_region_are_grey_and_triggered_ones_differ_from_the_rest() -> None:
    traces = _traces(region_figure(PLACED, NO_SEEDS))
    member = traces["triggered"]
    lone_on, lone_off = traces["no region, triggered"], traces["no region, not triggered"]
    assert list(member.x) == [0.0, 10.0, 20.0] and member.marker.symbol == "circle"
    assert (list(lone_on.x), list(lone_off.x)) == ([30.0], [40.0])
    assert lone_off.marker.symbol == "circle-open"  # hollow
    assert lone_on.marker.symbol == "circle-open-dot"  # hollow, but marked as triggered
    assert lone_on.marker.color == lone_off.marker.color != member.marker.color
    assert lone_off.marker.color not in REGION_COLOURS
    assert "not triggered" not in traces  # every region member here is triggered


def test_the_axes_are_to_scale_in_metres() -> None:
    layout = region_figure(PLACED, NO_SEEDS).layout
    assert layout.yaxis.scaleanchor == "x" and layout.yaxis.scaleratio == 1
    assert (layout.xaxis.title.text, layout.yaxis.title.text) == ("x (m)", "y (m)")


def test_chains_are_lines_through_their_sensors() -> None:
    figure = region_figure(PLACED, SEEDS, chains=[["a", "b", "nowhere", "d"], ["a", "nowhere"]])
    chain = _traces(figure)["chain to d"]
    assert chain.mode == "lines"
    assert (list(chain.x), list(chain.y)) == ([0.0, 10.0, 30.0], [0.0, 0.0, 5.0])
    assert chain.hovertext[0].startswith("step 1 of 3<br>sensor a")
    # a chain with one sensor placed draws nothing
    assert [t.name for t in figure.data if t.mode == "lines"] == ["chain to d"]


def test_lost_sensors_are_marked_with_an_x() -> None:
    lost = _traces(region_figure(PLACED, NO_SEEDS, lost={"e", "b", "nowhere"}))["lost"]
    assert lost.marker.symbol == "x"
    assert (list(lost.x), list(lost.y)) == ([10.0, 40.0], [0.0, 5.0])
    assert lost.hovertext[0].startswith("lost in the what-if<br>sensor b")
    assert "lost" not in _traces(region_figure(PLACED, NO_SEEDS))


def test_no_sensors_is_an_empty_map_to_scale() -> None:
    figure = region_figure(PLACED.iloc[:0], NO_SEEDS, chains=[["a", "b"]], lost={"a"})
    assert figure.data == () and figure.layout.yaxis.scaleanchor == "x"


def _strings(node: object, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every string in a figure's JSON, with the keys leading to it."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value, path)


def test_hostile_ids_are_only_plain_text_on_the_map() -> None:
    placed = pd.DataFrame({"sensor": [TAG, MATH, "s\nx"], "x": [0.0, 5.0, 9.0],
                           "y": [0.0] * 3, "region": [LINK, BOLD, NO_REGION],
                           "triggered": [True, True, False]})
    seeds = pd.DataFrame({"region": [LINK], "id": [TAG]})
    figure = region_figure(placed, seeds, chains=[[TAG, MATH]], lost={MATH})
    spec = figure.to_plotly_json()
    found = [(path, value) for path, value in _strings(spec)
             if any(key in value for key in ("evil", "bold", "&lt;b&gt;", "&#36;", "s\\nx"))]
    # the ids are in hover texts, legend names and the seed's label, and nowhere else
    assert {path[-1] for path, _ in found} == {"hovertext", "name", "text"}
    assert {path for path, _ in found if path[-1] == "text"} == {
        ("layout", "annotations", "text")}
    text = json.dumps(spec)
    assert TAG not in text and MATH not in text and "<a" not in text and "s\nx" not in text
    hover = _traces(figure)["seed"].hovertext[0]
    assert hover.startswith(f"sensor &lt;b&gt;x&lt;/b&gt;<br>regions: {LINK}")
    assert _traces(figure)["chain to &#36;x&#36;"].hovertext[1].startswith(
        "step 2 of 2<br>sensor &#36;x&#36;")
    # plotly shows Markdown as its text
    assert [a.text for a in figure.layout.annotations] == [LINK]


def test_plain_escapes_markup_math_and_control_characters() -> None:
    assert plain("<a href='x'>y</a>") == "&lt;a href='x'&gt;y&lt;/a&gt;"
    assert (plain("$x$"), plain("a\nb"), plain(3.5)) == ("&#36;x&#36;", "a\\nb", "3.5")


# -- the tables -----------------------------------------------------------------------------


def test_region_table_counts_members_and_marks_the_largest() -> None:
    placed = pd.concat([PLACED, pd.DataFrame(
        [("e", 40.0, 5.0, "r4", False)], columns=PLACED.columns)], ignore_index=True)
    sizes = pd.DataFrame({"region": ["r1", "r2", "r3", "r4", "r5"], "size": [3, 3, 3, 1, 2]})
    largest = pd.DataFrame({"region": ["r1", "r2", "r3"], "size": [3, 3, 3]})
    table = region_table(placed, sizes, largest, SEEDS)
    assert list(table.columns) == ["region", "seed", "members", "triggered members", "size",
                                   "largest"]
    assert table.values.tolist() == [
        ["r1", "a", 3, 3, 3, True],
        ["r2", "a", 3, 3, 3, True],
        ["r3", "c", 3, 3, 3, True],
        ["r4", "gone", 1, 0, 1, False],
        ["r5", "", 0, 0, 2, False],  # counted by the view, no member on the map
    ]


def test_region_table_without_the_aggregate_views_has_no_size() -> None:
    table = region_table(PLACED, None, None)
    assert table["region"].tolist() == ["r1", "r2", "r3"]
    assert table["size"].isna().all() and not table["largest"].any()
    assert table["members"].tolist() == [3, 3, 3]
    assert region_table(PLACED.iloc[:0], None, None).empty


def test_sensor_table_is_one_row_per_sensor_with_its_regions_as_text() -> None:
    table = sensor_table(PLACED, SEEDS)
    assert list(table.columns) == ["sensor", "x (m)", "y (m)", "triggered", "regions",
                                   "seed of"]
    assert table.values.tolist() == [
        ["a", 0.0, 0.0, True, "r1, r2, r3", "r1, r2"],
        ["b", 10.0, 0.0, True, "r1, r2, r3", ""],
        ["c", 20.0, 0.0, True, "r1, r2, r3", "r3"],
        ["d", 30.0, 5.0, True, NO_REGION, ""],
        ["e", 40.0, 5.0, False, NO_REGION, ""],
    ]


# -- paging ---------------------------------------------------------------------------------


def test_page_of_says_which_rows_a_page_holds() -> None:
    frame = pd.DataFrame({"n": range(10)})
    rows, first, last, pages = page_of(frame, 4, 3)
    assert (rows["n"].tolist(), first, last, pages) == ([9], 10, 10, 4)
    assert page_of(frame, 0, 3)[1:] == (1, 3, 4)  # below the first page: the first
    assert page_of(frame, 99, 3)[1:] == (10, 10, 4)  # past the last page: the last
    assert page_of(frame.iloc[:0], 1, 3)[1:] == (0, 0, 1)
    with pytest.raises(ValueError, match="page_size"):
        page_count(10, 0)


@settings(max_examples=150, deadline=None)
@given(total=st.integers(0, 120), page_size=st.integers(1, 40))
def test_the_pages_cover_every_row_exactly_once(total: int, page_size: int) -> None:
    frame = pd.DataFrame({"n": range(total), "label": [f"row {i}" for i in range(total)]},
                         index=[f"i{i}" for i in range(total)])
    pages = page_count(total, page_size)
    shown = []
    for page in range(1, pages + 1):
        rows, first, last, counted = page_of(frame, page, page_size)
        assert counted == pages and 0 < len(rows) <= page_size or total == 0
        if not rows.empty:
            assert (first, last) == (rows["n"].iloc[0] + 1, rows["n"].iloc[-1] + 1)
        shown.append(rows)
    pd.testing.assert_frame_equal(pd.concat(shown), frame)
    assert pages == max(-(-total // page_size), 1)


def _paged_script(dashboards: str) -> None:
    """A page showing ``n`` rows (``st.session_state["rows"]``, 25 by default), 10 a page."""
    import sys

    import pandas as pd
    import streamlit as st

    sys.path.insert(0, dashboards)
    from paging import show_paged

    show_paged(pd.DataFrame({"n": range(st.session_state.get("rows", 25))}), "page", 10)


def test_show_paged_says_which_rows_and_keeps_the_page_in_range() -> None:
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_function(_paged_script, args=(str(DASHBOARDS),), default_timeout=30).run()
    assert app.caption[0].value == "Rows 1–10 of 25 (page 1 of 3)."
    assert app.number_input(key="page").label == "Page (of 3)"
    app.number_input(key="page").set_value(3).run()
    assert app.dataframe[0].value["n"].tolist() == [20, 21, 22, 23, 24]
    app.session_state["rows"] = 15  # the frame shrank under the page: its last page instead
    app.run()
    assert not app.exception, app.exception
    assert app.caption[0].value == "Rows 11–15 of 15 (page 2 of 2)."
    assert app.number_input(key="page").value == 2
    app.session_state["rows"] = 1
    app.run()
    assert app.caption[0].value == "1 row." and not app.number_input
    app.session_state["rows"] = 0
    app.run()
    assert app.caption[0].value == "No rows." and app.dataframe[0].value.empty
