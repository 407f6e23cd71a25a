"""The view registry: every registered view provides what a view must, the registry agrees with
``aspen.catalog`` (names, order, columns) and with the from-scratch oracle, and each consumer
that reads it sees every view."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.baselines import oracles
from aspen.baselines.scratch import base_state, evaluate_all
from aspen.catalog import VIEW_COLUMNS, VIEWS
from aspen.engine.plan import PlanChoices
from aspen.errors import UnknownViewError
from aspen.quality.views import AGGREGATE_VIEWS, CROSS_CHECKS, VIEW_KEYS, VIEW_SUITES
from aspen.views import build_dataflow
from aspen.views.fragment import Fragment
from aspen.views.registry import REGISTRY, view
from aspen.views.spec import View

#: What every view must provide, each a check of one registered view (name → check).
REQUIRED = {
    "a name the catalog knows": lambda v: v.name in VIEW_COLUMNS,
    "columns, from the catalog": lambda v: v.columns == VIEW_COLUMNS[v.name] and v.columns,
    "a key of its columns": lambda v: v.key and set(v.key) <= set(v.columns)
    and len(set(v.key)) == len(v.key),
    "whether it carries provenance": lambda v: isinstance(v.provenance, bool),
    "a fragment builder": lambda v: callable(v.fragment),
    "an oracle": lambda v: callable(v.oracle),
    "needs registered before it": lambda v: all(
        n in REGISTRY and list(REGISTRY).index(n) < list(REGISTRY).index(v.name)
        for n in v.needs),
    "a title": lambda v: isinstance(v.title, str) and v.title.strip() == v.title != "",
    "known cross-table checks": lambda v: set(v.checks) <= set(CROSS_CHECKS),
    "hop paths that are path columns of a view with hops": lambda v: not v.hop_paths or (
        "hops" in v.columns and set(v.hop_paths) <= set(v.columns)),
    "a measure on a cost or hops column": lambda v: v.measure is None or (
        v.columns[v.measure[0]] == ("cost" if v.measure[1] else "hops")),
}


def test_the_registry_holds_the_catalogs_views_in_its_order() -> None:
    assert list(REGISTRY) == list(VIEWS)
    assert all(isinstance(v, View) and v.name == name for name, v in REGISTRY.items())
    assert len({v.title for v in REGISTRY.values()}) == len(REGISTRY)  # titles tell views apart


@pytest.mark.parametrize("requirement", list(REQUIRED))
@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_view_provides_what_a_view_must(name: str, requirement: str) -> None:
    assert REQUIRED[requirement](REGISTRY[name]), f"{name} lacks {requirement}"


@pytest.mark.parametrize("name", list(REGISTRY))
def test_each_fragment_builds_its_view_alone(name: str) -> None:
    spec = REGISTRY[name]
    fragment = spec.fragment({name}, PlanChoices())
    assert isinstance(fragment, Fragment)
    outputs = [o for o in fragment.outputs if o.view == name]
    assert len(outputs) == 1
    assert outputs[0].param("formulas", True) is spec.provenance
    flow = build_dataflow((name,))
    assert [o.view for o in flow.outputs] == [name]


def test_all_views_compile_together_and_share_their_families_operators() -> None:
    flow = build_dataflow(VIEWS)
    assert [o.view for o in flow.outputs] == list(VIEWS)
    names = [op.name for op in flow.ops]
    assert len(names) == len(set(names))


def test_unknown_views_are_refused_in_one_line() -> None:
    with pytest.raises(UnknownViewError, match="unknown view 'reach'; known views: reachable"):
        view("reach")
    assert view("largest_regions") is REGISTRY["largest_regions"]


def test_the_quality_suites_follow_the_registry() -> None:
    assert [s.table for s in VIEW_SUITES] == list(REGISTRY)
    assert AGGREGATE_VIEWS == {n for n, v in REGISTRY.items() if not v.provenance}
    assert VIEW_KEYS == {n: v.key for n, v in REGISTRY.items()}
    for suite in VIEW_SUITES:
        assert [c.name for c in suite.cross_checks] == list(REGISTRY[suite.table].checks)


# ---------------------------------------------------------------- the oracle agrees

NODES = st.sampled_from(["a", "b", "c", "d"])
SENSORS = st.sampled_from(["s1", "s2", "s3", "s4"])
FACTS = st.fixed_dictionaries({
    "link": st.lists(st.tuples(NODES, NODES, st.integers(0, 3).map(float)), max_size=7),
    "sensor": st.lists(st.tuples(SENSORS, st.integers(0, 40), st.integers(0, 40)), max_size=4,
                       unique_by=lambda t: t[0]),
    "triggered": st.lists(st.tuples(SENSORS), max_size=4),
    "region_seed": st.lists(st.tuples(st.sampled_from(["r1", "r2"]), SENSORS), max_size=3),
})


@settings(max_examples=60, deadline=None)
@given(facts=FACTS)
def test_each_oracle_is_what_the_scratch_evaluation_gives(facts: dict) -> None:
    everything = evaluate_all(facts)
    assert list(everything) == list(VIEWS)
    scratch = oracles.Scratch(base_state(facts))
    for name, spec in REGISTRY.items():
        rows = spec.oracle(scratch, {n: everything[n] for n in spec.needs})
        assert rows == everything[name] == evaluate_all(facts, views=(name,))[name]
        # the rows fit the catalog's columns and the declared key is unique
        assert all(len(row) == len(spec.columns) for row in rows)
        at = [spec.columns.index(c) for c in spec.key]
        keys = [tuple(row[i] for i in at) for row in rows]
        assert len(keys) == len(set(keys)), f"{name}: key {spec.key} is not unique"
        if spec.measure is not None:
            assert all(math.isfinite(row[spec.measure[0]]) for row in rows)


def test_an_oracle_reads_only_the_views_it_needs() -> None:
    facts = {"link": [("a", "b", 1.0), ("b", "c", 2.0)],
             "sensor": [("s1", 0, 0), ("s2", 0, 10)], "triggered": [("s1",), ("s2",)],
             "region_seed": [("r1", "s1")]}
    scratch = oracles.Scratch(base_state(facts))
    everything = evaluate_all(facts)
    for name, spec in REGISTRY.items():
        given_only = {n: everything[n] for n in spec.needs}
        assert spec.oracle(scratch, given_only) == everything[name]
    assert everything["largest_regions"] == {("r1", 2)}
