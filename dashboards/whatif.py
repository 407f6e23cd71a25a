"""What-if answers in an operator's words: pairs disconnected and rerouted (with the latency
they add), routers isolated, regions that shrink, per domain (:func:`impact_tables`,
:func:`impact_words`); and, for experts, which view rows a set of deletions would remove and,
for a pair that keeps a route, what it costs afterwards (:func:`pair_losses`,
:func:`summary_rows`).

The lost rows come from the stored provenance (:meth:`LakeProvenance.what_if`); the network
answer from ``aspen.views.network_health.failure_impact`` (through ``healthview``); the "after"
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
from healthview import FailureImpact, RegionChange, percent_text
from lakeview import REGISTRY

__all__ = [
    "VIEW_WORDS",
    "Answer",
    "Question",
    "domain_table",
    "impact_words",
    "region_table",
    "reroute_table",
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
    #: the answer in network terms (None: no link view to answer from)
    impact: FailureImpact | None = None
    #: every region with the sensors it would lose
    regions: list[RegionChange] = field(default_factory=list)


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


def _ms(value: float | None) -> str:
    """An added latency: ``+12 ms``; ``–`` when there is none.

    >>> _ms(12.0), _ms(2.5), _ms(None)
    ('+12 ms', '+2.5 ms', '–')
    """
    return "–" if value is None else f"+{value:g} ms"


def impact_words(impact: FailureImpact, regions: Sequence[RegionChange] = (),
                 costs_known: bool = True) -> list[str]:
    """The answer in sentences: one count per question (numbers and fixed words only);
    ``costs_known``: whether the lake holds the least costs (``min_cost``) to tell reroutes by.

    >>> from healthview import Reroute
    >>> impact = FailureImpact(10, 2, [Reroute("a", "c", 3.0, 5.0)], ("d",))
    >>> impact_words(impact, [RegionChange("r1", 4, ("s2",))])
    ['2 of 10 pairs disconnected (20.0 %)', '1 pair rerouted over a costlier route: +2 ms \
median, +2 ms worst', '1 router isolated', '1 region shrinks, none is lost']
    >>> impact_words(FailureImpact(10, 0), costs_known=False)[1]
    'reroutes unknown: the lake holds no least costs (the min_cost view)'
    """
    words = [impact.share_text()]
    count = len(impact.reroutes)
    if not costs_known:
        words.append("reroutes unknown: the lake holds no least costs (the min_cost view)")
    elif count:
        words.append(f"{count:,} pair{'s' if count != 1 else ''} rerouted over a costlier "
                     f"route: {_ms(impact.added_median())} median, "
                     f"{_ms(impact.added_worst())} worst")
    else:
        words.append("no pair rerouted: every pair that stays connected keeps its cost")
    isolated = len(impact.isolated)
    words.append(f"{isolated:,} router{'s' if isolated != 1 else ''} isolated" if isolated
                 else "no router isolated")
    shrunk = [r for r in regions if r.lost and not r.gone]
    gone = [r for r in regions if r.gone]
    if shrunk or gone:
        words.append(f"{len(shrunk)} region{'s' if len(shrunk) != 1 else ''} "
                     f"shrink{'s' if len(shrunk) == 1 else ''}, "
                     + (f"{len(gone)} lost" if gone else "none is lost"))
    if impact.unexplained:
        words.append(f"{impact.unexplained:,} pair(s) lose their least cost but no route was "
                     "found over the links left: the views are behind the links")
    return words


def domain_table(impact: FailureImpact) -> pd.DataFrame:
    """Per domain touched: routers isolated, pairs from or to it disconnected and rerouted.

    >>> from healthview import DomainImpact
    >>> impact = FailureImpact(4, 1, domains=[DomainImpact("s0.1", 1, 1, 0)])
    >>> domain_table(impact).values.tolist()
    [['s0.1', 1, 1, 0]]
    """
    return pd.DataFrame(
        [(d.domain, d.isolated, d.disconnected, d.rerouted) for d in impact.domains],
        columns=["domain", "routers isolated", "pairs disconnected", "pairs rerouted"])


def reroute_table(impact: FailureImpact) -> pd.DataFrame:
    """The rerouted pairs, worst first: least cost before and after, and the latency added.

    >>> from healthview import Reroute
    >>> reroute_table(FailureImpact(3, 0, [Reroute("a", "c", 3.0, 5.0)])).values.tolist()
    [['a', 'c', '3 ms', '5 ms', '+2 ms']]
    """
    return pd.DataFrame(
        [(r.src, r.dst, cost_text(r.before, True), cost_text(r.after, True), _ms(r.added))
         for r in impact.reroutes],
        columns=["from", "to", "before", "after", "added"])


def region_table(regions: Sequence[RegionChange]) -> pd.DataFrame:
    """Every region: sensors now, lost and kept, whether it is gone, which sensors it loses.

    >>> region_table([RegionChange("r1", 4, ("s2",)), RegionChange("r2", 1, ())]).values.tolist()
    [['r1', 4, 1, 3, False, 's2'], ['r2', 1, 0, 1, False, '']]
    """
    return pd.DataFrame(
        [(r.region, r.size, len(r.lost), r.kept, r.gone, ", ".join(r.lost)) for r in regions],
        columns=["region", "sensors", "lost", "kept", "gone", "sensors lost"])


def share_text(part: int, whole: int) -> str:
    """``1,875 of 10,000 (18.8 %)``.

    >>> share_text(1875, 10000)
    '1,875 of 10,000 (18.8 %)'
    """
    return f"{part:,} of {whole:,} ({percent_text(part, whole)})"
