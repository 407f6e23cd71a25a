"""What-if answers in an operator's words: which view rows a set of deletions would remove, and,
for a pair that keeps a route, what it costs afterwards.

The lost rows come from the stored provenance (:meth:`LakeProvenance.what_if`); the "after"
columns of the path views are a Dijkstra over the links that would remain, for the lost pairs
only (nothing is written).

>>> lost = {"reachable": [("a", "c")], "min_cost": [("a", "c", 4.0), ("a", "b", 1.0)]}
>>> remaining = [("a", "b", 5.0), ("c", "b", 1.0)]
>>> pair_losses(lost, remaining)["min_cost"].to_dict("records")
[{'from': 'a', 'to': 'b', 'before': '1 ms', 'after': 'now 5 ms'}, \
{'from': 'a', 'to': 'c', 'before': '4 ms', 'after': 'disconnected'}]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import networkx as nx
import pandas as pd
from lakeview import REGISTRY

__all__ = [
    "VIEW_WORDS",
    "Answer",
    "Question",
    "link_label",
    "pair_losses",
    "remaining_links",
    "summary_rows",
]

#: Every view in plain words, in the order the page lists them (the view registry's titles).
VIEW_WORDS: dict[str, str] = {name: view.title for name, view in REGISTRY.items()}
#: Path views: (column of the measure, True for costs / False for hops).
_MEASURES: dict[str, tuple[int, bool]] = {
    name: view.measure for name, view in REGISTRY.items() if view.measure is not None}


@dataclass(frozen=True)
class Question:
    """What the operator deletes: links ``(src, dst)``, a node, sensors."""

    links: tuple[tuple[str, str], ...] = ()
    node: str | None = None
    sensors: tuple[str, ...] = ()

    def words(self) -> str:
        """The question in words.

        >>> Question(links=(("a", "b"),), sensors=("s1", "s2")).words()
        'link a → b; sensors s1, s2'
        """
        parts = []
        if self.links:
            parts.append("link" + ("s" if len(self.links) > 1 else "") + " "
                         + ", ".join(f"{s} → {d}" for s, d in self.links))
        if self.node is not None:
            parts.append(f"node {self.node} (every link into or out of it)")
        if self.sensors:
            parts.append("sensor" + ("s" if len(self.sensors) > 1 else "") + " "
                         + ", ".join(self.sensors))
        return "; ".join(parts)


@dataclass
class Answer:
    """One simulated question and what it would remove."""

    question: Question
    deleted_vars: int
    lost: dict[str, list[tuple]]
    kept: dict[str, int]
    milliseconds: float
    lake_versions: tuple = ()
    skipped_sensors: list[str] = field(default_factory=list)
    #: every ``active_region`` row before the deletions (region sizes before and after)
    region_members: list[tuple] = field(default_factory=list)
    #: pairs of a node with itself that stay reachable (a cycle is left)
    cycles_kept: set[tuple[str, str]] = field(default_factory=set)


def cost_text(value: object, costs: bool) -> str:
    """A cost in ms or a hop count, as text.

    >>> cost_text(12.0, True), cost_text(3, False), cost_text(None, True)
    ('12 ms', '3 hops', '–')
    """
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "–"
    if costs:
        return f"{float(value):g} ms"  # type: ignore[arg-type]
    hops = int(value)  # type: ignore[call-overload]
    return f"{hops} hop" + ("" if hops == 1 else "s")


def link_label(src: str, dst: str, cost: object = None) -> str:
    """A link as the page names it.

    >>> link_label("a", "b", 10.0), link_label("a", "b")
    ('a → b (10 ms)', 'a → b')
    """
    return f"{src} → {dst}" + ("" if cost is None else f" ({cost_text(cost, True)})")


def remaining_links(edges: pd.DataFrame, question: Question) -> list[tuple[str, str, float]]:
    """The live links ``(src, dst, cost)`` that the ``question``'s deletions leave.

    >>> edges = pd.DataFrame({"src": ["a", "b", "c"], "dst": ["b", "c", "a"], "cost": [1., 2., 3.]})
    >>> remaining_links(edges, Question(links=(("a", "b"),), node="c"))
    []
    """
    gone = set(question.links)
    return [
        (str(s), str(d), float(c))
        for s, d, c in edges[["src", "dst", "cost"]].itertuples(index=False)
        if (s, d) not in gone and question.node not in (s, d)
    ]


def _after(graph: nx.DiGraph, pairs: Iterable[tuple[str, str]], costs: bool,
           connected: set[tuple[str, str]] | None) -> dict[tuple[str, str], str]:
    """Per pair: the best cost or hop count over ``graph``, or ``disconnected``."""
    out: dict[tuple[str, str], str] = {}
    by_source: dict[str, list[str]] = {}
    for src, dst in pairs:
        by_source.setdefault(src, []).append(dst)
    for src, targets in by_source.items():
        if src in graph:
            if costs:
                found = nx.single_source_dijkstra_path_length(graph, src, weight="cost")
            else:
                found = nx.single_source_shortest_path_length(graph, src)
        else:
            found = {}
        for dst in targets:
            if src == dst:  # a pair of a node with itself is a cycle: not a route's length
                alive = connected is not None and (src, dst) in connected
                out[(src, dst)] = "still on a cycle" if alive else "disconnected"
            elif dst in found:
                out[(src, dst)] = "now " + cost_text(found[dst], costs)
            else:
                out[(src, dst)] = "disconnected"
    return out


def pair_losses(lost: dict[str, list[tuple]], remaining: Sequence[tuple[str, str, float]],
                still_reachable: set[tuple[str, str]] | None = None) -> dict[str, pd.DataFrame]:
    """Per path view with lost rows: from, to, before, and after (``now …`` or
    ``disconnected``), computed over the ``remaining`` links; ``reachable`` lists its pairs.
    ``still_reachable`` (pairs of a node with itself that keep a cycle) only matters for those.
    """
    graph = nx.DiGraph()
    for src, dst, cost in remaining:
        if graph.has_edge(src, dst):
            cost = min(cost, graph[src][dst]["cost"])
        graph.add_edge(src, dst, cost=cost)
    frames: dict[str, pd.DataFrame] = {}
    for view, rows in lost.items():
        if not rows:
            continue
        if view == "reachable":
            frames[view] = pd.DataFrame(
                [(str(r[0]), str(r[1])) for r in rows], columns=["from", "to"]
            ).sort_values(["from", "to"]).reset_index(drop=True)
            continue
        if view not in _MEASURES:
            continue
        column, costs = _MEASURES[view]
        pairs = sorted({(str(r[0]), str(r[1])) for r in rows})
        after = _after(graph, pairs, costs, still_reachable)
        table = []
        for row in rows:
            src, dst = str(row[0]), str(row[1])
            record = {"from": src, "to": dst}
            if view in ("cheapest_path", "fewest_hops"):
                record["route"] = " → ".join(str(n) for n in row[2])
            if view == "shortest_cheapest_path":
                record["cheapest route"] = " → ".join(str(n) for n in row[2])
                record["fewest-hop route"] = " → ".join(str(n) for n in row[4])
            record["before"] = cost_text(row[column], costs)
            record["after"] = after[(src, dst)]
            table.append(record)
        frames[view] = (pd.DataFrame(table).sort_values(["from", "to"], kind="stable")
                        .reset_index(drop=True))
    return frames


def summary_rows(answer: Answer) -> pd.DataFrame:
    """One row per view: rows lost and kept, in plain words.

    >>> a = Answer(Question(), 1, {"reachable": [("a", "b")]}, {"reachable": 4}, 1.0)
    >>> summary_rows(a).to_dict("records")
    [{'view': 'Reachable pairs', 'rows lost': 1, 'rows kept': 4}]
    """
    rows = [
        {"view": VIEW_WORDS.get(view, view), "rows lost": len(gone),
         "rows kept": answer.kept.get(view, 0)}
        for view, gone in answer.lost.items()
    ]
    return pd.DataFrame(rows, columns=["view", "rows lost", "rows kept"])
