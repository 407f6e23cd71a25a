"""The worked example of Liu 2016, Fig. 21 / Example 7 as a search space with the figure's costs.

The figure is the and-or graph of Q3S (customer C, orders O, lineitem L; joins C–O and O–L)
drawn logically: one AND node per split, each labelled with its LocalCost and PlanCost, each OR
node with its BestCost. Example 7 gives these numbers: AND (C,O) = 0.07 + BestCost(C) 0.04 +
BestCost(O) 0.19 = 0.30; the root (COL) = min(1.00, 1.01) = 1.00, the 1.01 being (L,CO).

The mapping onto our model. With the join methods limited to ``shuffle_hash`` there are no
sort properties, so the OR nodes are exactly the figure's six: (C), (O), (L), (CO), (OL),
(COL). The method is asymmetric, so each split is two AND nodes, (X,Y) and (Y,X); the figure's
AND node is the order it names — (C,O), (O,L), (C,OL), (L,CO) — and gets the figure's local
cost; the mirrored order costs 1.00 more (it exists in the model, never wins, and pruning may
skip it). :class:`Fig21Space` returns these local costs whatever the statistics.

Only 0.04, 0.19, 0.07 (hence 0.30), 1.00 and 1.01 come from the seed. The rest is chosen to
make them come out: scan (L) = 0.45; (O,L) local 0.10, so BestCost(OL) = 0.74; (C,OL) local
0.22, so PlanCost = 0.22 + 0.04 + 0.74 = 1.00; (L,CO) local 0.26, so 0.26 + 0.45 + 0.30 = 1.01.

Import it with ``from fig21 import ...`` (this folder's conftest puts it on ``sys.path``).
"""

from __future__ import annotations

from aspen.optimizer.query import Query
from aspen.optimizer.space import AndNode, SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats
from aspen.optimizer.tpch import QUERIES

__all__ = ["BEST_PLAN", "CO_PLAN", "FIG21_LOCAL", "MIRROR_EXTRA", "Fig21Space", "fig21_space"]

#: The figure's local costs: scans by relation, joins by (left, right) relations.
FIG21_LOCAL: dict[tuple[str, ...], float] = {
    ("c",): 0.04, ("o",): 0.19, ("l",): 0.45,
    ("c", "o"): 0.07, ("o", "l"): 0.10, ("c", "ol"): 0.22, ("l", "co"): 0.26,
}
#: What the mirrored order of each of the figure's joins costs more.
MIRROR_EXTRA = 1.0

#: The best plan of the whole query (root 1.00) and of the sub-query (CO) (0.30).
BEST_PLAN = {"join": "shuffle_hash", "left": {"scan": "c"},
             "right": {"join": "shuffle_hash", "left": {"scan": "o"}, "right": {"scan": "l"}}}
CO_PLAN = {"join": "shuffle_hash", "left": {"scan": "c"}, "right": {"scan": "o"}}

_ORDER = "col"  # the figure names sets of relations in this order: (CO), (OL), (COL)


def _name(expr: frozenset[str]) -> str:
    return "".join(sorted(expr, key=_ORDER.index))


class Fig21Space(SearchSpace):
    """Q3S's space with shuffle-hash joins only and Fig. 21's local costs."""

    def local_cost(self, alt: AndNode, stats: Stats) -> float:
        if alt.op == "scan":
            return FIG21_LOCAL[(_name(alt.parent.expr),)]
        assert alt.op == "join" and alt.left is not None and alt.right is not None
        left, right = _name(alt.left.expr), _name(alt.right.expr)
        if (left, right) in FIG21_LOCAL:
            return FIG21_LOCAL[(left, right)]
        return FIG21_LOCAL[(right, left)] + MIRROR_EXTRA


def fig21_space(aliases: str = "col") -> Fig21Space:
    """The figure's space over Q3S, or over the sub-query of some of its relations (``"co"``:
    the OR node (CO) as a query of its own)."""
    q3s = QUERIES["Q3S"]
    keep = set(aliases)
    query = Query({a: t for a, t in q3s.relations.items() if a in keep},
                  tuple(p for p in q3s.joins if p.aliases <= keep),
                  tuple(f for f in q3s.filters if f.relation in keep), name=f"Q3S[{aliases}]")
    return Fig21Space(query, SpaceOptions(methods=("shuffle_hash",)))
