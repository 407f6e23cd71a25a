"""The demo's continuous queries parse, are maintained incrementally, and register."""

from __future__ import annotations

import pytest

from aspen.queries.demo_queries import DEMO_QUERIES, register_demo_queries
from aspen.queries.incremental.compile import IncrementalPlan, compile_query
from aspen.queries.registry import list_queries
from aspen.queries.sql import parse_query
from aspen.settings import Settings


@pytest.mark.parametrize("name", sorted(DEMO_QUERIES))
def test_each_demo_query_is_maintained_incrementally(name: str) -> None:
    sql, _meaning = DEMO_QUERIES[name]
    assert isinstance(compile_query(parse_query(name, sql)), IncrementalPlan)


def test_registering_twice_replaces(tmp_path) -> None:
    lake = Settings(lake=str(tmp_path / "lake"))
    assert register_demo_queries(lake) == register_demo_queries(lake)
    assert sorted(entry.name for entry in list_queries(lake)) == sorted(DEMO_QUERIES)
