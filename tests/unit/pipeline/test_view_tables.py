"""View tables: rows ↔ engine tuples, provenance through the byte codec."""

from __future__ import annotations

import pytest

from aspen.catalog import VIEW_COLUMNS
from aspen.errors import UnknownViewError
from aspen.lake.deltars import read_table, write_table
from aspen.pipeline.view_tables import row_to_tuple, view_frame
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings


def test_every_design_view_has_columns() -> None:
    assert set(VIEW_COLUMNS) == {
        "reachable", "min_cost", "min_hops", "cheapest_path", "fewest_hops",
        "shortest_cheapest_path", "active_region", "region_sizes", "largest_regions",
    }


def test_unknown_view() -> None:
    with pytest.raises(UnknownViewError, match="known views"):
        row_to_tuple("paths", {})


def test_round_trip_through_delta(tmp_path) -> None:
    settings = Settings(lake=str(tmp_path))
    m = ProvenanceManager()
    p1, p2 = m.var("v1"), m.var("v2")
    tuples = {
        ("a", "c", ("a", "b", "c"), 3.0): m.and_(p1, p2),
        ("a", "b", ("a", "b"), 1.0): p1,
    }
    write_table(settings, "cheapest_path", view_frame("cheapest_path", tuples, m, batch_id=7))
    frame = read_table(settings, "cheapest_path")
    assert set(frame["batch_id"]) == {7}
    back = {row_to_tuple("cheapest_path", r): m.decode(bytes(r["provenance"]))
            for r in frame.to_dict("records")}
    assert back == tuples
    assert (frame["prov_bytes"] > 0).all()


def test_empty_view_writes_an_empty_table(tmp_path) -> None:
    settings = Settings(lake=str(tmp_path))
    write_table(settings, "reachable", view_frame("reachable", {}, None, batch_id=1))
    assert read_table(settings, "reachable").empty
