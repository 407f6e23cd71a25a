"""Reading an executed plan (aspen.queries.physical) and plan trees (aspen.queries.planner) on
trees built by hand: which operator ran each planned join, and the rows it observed."""

from __future__ import annotations

import pytest

from aspen.errors import ConfigError
from aspen.optimizer.stats import Stats
from aspen.queries.physical import PhysicalNode, find_join, input_rows, matches, scan_rows
from aspen.queries.planner import choose_plan, plan_lines, plan_nodes
from aspen.queries.sql import parse_query

KNOWN = {"a", "b", "s"}


def _scan(alias: str, columns: tuple[str, ...], scanned: int, kept: int) -> PhysicalNode:
    """A relation's scan chain: Scan → Filter → Project (renaming to flat names)."""
    leaf = PhysicalNode("Scan parquet", scanned, None, columns, ())
    kept_node = PhysicalNode("Filter", kept, None, columns, (leaf,))
    return PhysicalNode("Project", None, None, tuple(f"{alias}__{c}" for c in columns),
                        (kept_node,))


def _tree() -> PhysicalNode:
    """((a ⋈ b) ⋈ s): a shuffle-hash join of a and b, its result joined with a broadcast s."""
    a, b, s = _scan("a", ("src", "dst"), 10, 8), _scan("b", ("src", "dst"), 10, 10), \
        _scan("s", ("id",), 5, 3)
    ab = PhysicalNode("ShuffledHashJoin", 12, "BuildRight", ("a__src", "b__dst"),
                      (PhysicalNode("Exchange", None, None, a.outputs, (a,)),
                       PhysicalNode("Exchange", None, None, b.outputs, (b,))))
    top = PhysicalNode("BroadcastHashJoin", 4, "BuildRight", ("a__src",),
                       (PhysicalNode("Project", None, None, ab.outputs, (ab,)),
                        PhysicalNode("BroadcastExchange", 3, None, s.outputs, (s,))))
    return PhysicalNode("HashAggregate", 2, None, ("src", "n"), (top,))


def test_each_planned_join_is_found_with_its_inputs() -> None:
    tree = _tree()
    node, swapped = find_join(tree, frozenset("ab"), frozenset("s"), KNOWN)
    assert node is not None and not swapped and node.rows == 4
    assert matches("broadcast_hash", node) and not matches("sort_merge", node)
    assert [input_rows(c) for c in node.children] == [12, 3]
    node, swapped = find_join(tree, frozenset("b"), frozenset("a"), KNOWN)
    assert node is not None and swapped and matches("shuffle_hash", node)
    assert find_join(tree, frozenset("a"), frozenset("s"), KNOWN) == (None, False)


def test_scan_rows_are_after_the_filters() -> None:
    tree = _tree()
    assert [scan_rows(tree, alias, KNOWN) for alias in "abs"] == [8, 10, 3]


def test_a_single_relation_without_columns_still_has_its_scan() -> None:
    leaf = PhysicalNode("Scan parquet", 9, None, ("src",), ())
    chain = PhysicalNode("Project", None, None, (), (
        PhysicalNode("Filter", 6, None, ("src",), (leaf,)),))
    tree = PhysicalNode("HashAggregate", 1, None, ("n",), (chain,))
    assert scan_rows(tree, "link", {"link"}) == 6


def _grouped_scan(rows: int, tuples: int, kept: int, outputs: tuple[str, ...]) -> PhysicalNode:
    """A base table's scan as a run reads it: grouped by key (partial and final aggregate
    with an exchange between), a filter, the rename to ``alias__column``."""
    leaf = PhysicalNode("Scan parquet", rows, None, ("src", "dst", "cost"), ())
    partial = PhysicalNode("HashAggregate", rows, None, ("src", "dst"), (
        PhysicalNode("ColumnarToRow", None, None, ("src", "dst"), (leaf,)),))
    final = PhysicalNode("HashAggregate", tuples, None, ("src", "dst", "cost"), (
        PhysicalNode("Exchange", None, None, ("src", "dst"), (partial,)),))
    kept_rows = PhysicalNode("Filter", kept, None, ("src", "dst", "cost"), (final,))
    return PhysicalNode("Project", None, None, outputs, (kept_rows,))


def test_a_base_tables_scan_rows_are_its_tuples_after_the_filters() -> None:
    scan = _grouped_scan(12, 7, 5, ("a__src", "a__dst"))
    other = PhysicalNode("Scan parquet", 4, None, ("s__id",), ())
    join = PhysicalNode("SortMergeJoin", 3, None, ("a__src", "s__id"), (
        PhysicalNode("Sort", None, None, ("a__src",), (
            PhysicalNode("Exchange", None, None, ("a__src",), (scan,)),)),
        PhysicalNode("Sort", None, None, ("s__id",), (
            PhysicalNode("Exchange", None, None, ("s__id",), (other,)),))))
    assert scan_rows(join, "a", {"a", "s"}, grouped=True) == 5
    assert scan_rows(join, "a", {"a", "s"}) is None  # the aggregates hide the scan otherwise
    # a COUNT(*) of one relation: the query's own aggregates above are not the scan's
    counted = PhysicalNode("HashAggregate", 1, None, ("n",), (
        PhysicalNode("Exchange", None, None, ("count",), (
            PhysicalNode("HashAggregate", 1, None, ("count",), (
                _grouped_scan(12, 7, 7, ()),)),)),))
    assert scan_rows(counted, "a", {"a"}, grouped=True) == 7


PARSED = parse_query("q", "SELECT a.src FROM link a, link b, sensor s "
                          "WHERE a.dst = b.src AND b.dst = s.id AND s.x > 1")
STATS = Stats.from_json({"tables": {"link": {"rows": 100, "columns": {"dst": {"ndv": 10},
                                                                      "src": {"ndv": 10}}},
                                    "sensor": {"rows": 10, "columns": {"id": {"ndv": 10}}}},
                         "selectivity": {"s: x > 1": 0.5}})


def test_plan_nodes_children_first_with_estimates() -> None:
    plan = {"join": "sort_merge", "left": {"join": "broadcast_hash", "left": {"scan": "a"},
                                           "right": {"scan": "b"}}, "right": {"scan": "s"}}
    nodes = plan_nodes(plan, PARSED.query, STATS)
    assert [(n.path, n.operator) for n in nodes] == [
        ("root.L.L", "scan"), ("root.L.R", "scan"), ("root.L", "broadcast_hash"),
        ("root.R", "scan"), ("root", "sort_merge")]
    assert [n.estimated_rows for n in nodes] == [100, 100, 1000, 5, 500]
    assert nodes[-1].left == frozenset("ab") and nodes[-1].right == frozenset("s")


def test_a_plan_not_of_the_query_is_refused() -> None:
    with pytest.raises(ConfigError, match="cross product"):
        plan_nodes({"join": "sort_merge", "left": {"join": "sort_merge", "left": {"scan": "a"},
                                                   "right": {"scan": "s"}},
                    "right": {"scan": "b"}}, PARSED.query, STATS)


@pytest.mark.parametrize("method", ["exhaustive", "volcano", "systemr"])
def test_every_optimizer_method_plans_a_query(method: str) -> None:
    cost, plan = choose_plan(PARSED.query, STATS, method)
    assert cost == pytest.approx(choose_plan(PARSED.query, STATS)[0])
    lines = plan_lines(plan, PARSED.query, STATS)
    assert len(lines) == 5 and lines[0].endswith("~500 rows")
