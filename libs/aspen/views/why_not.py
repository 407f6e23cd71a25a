"""Why not: why a pair ``(src, dst)`` is not in ``reachable``, from the links alone.

``reachable`` is the transitive closure of the live links, so a missing pair has one of four
answers, computed here from plain edge lists (no provenance, no lake):

* ``unknown``: ``src`` or ``dst`` is on no link, live or recently dead: not a node of the network;
* ``reachable``: ``dst`` *is* reachable over live links now (the caller's view is behind), with
  the route;
* ``dead``: a route exists once recently dead links count; the one needing the fewest dead
  links (then the cheapest, then the fewest links, then the first by node ids) and those links;
* ``cut``: not even the dead links connect them: the nodes ``src`` reaches, the nodes that reach
  ``dst``, and a few missing links, any single one of which would connect them.

A node reaches itself only around a cycle of at least one link (``reachable(x, x)`` holds only
via a cycle, as in :mod:`aspen.baselines.scratch`), so for ``src == dst`` every route here has at
least one link. Costs are finite and ≥ 0 (the ingest checks it); a missing one counts as 0.

>>> answer = why_not("a", "c", [("a", "b", 1.0)], [("b", "c", 2.0, "deleted", 7)])
>>> answer.verdict, answer.nodes, [link.src for link in answer.dead_links]
('dead', ('a', 'b', 'c'), ['b'])
>>> print("\\n".join(answer.sentences()))
a cannot reach c over live links.
The route needing the fewest recently dead links is a → b → c (3 ms); it needs 1 dead link:
b → c (2 ms), deleted in batch 7
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MAX_LISTED_NODES",
    "Link",
    "Verdict",
    "WhyNot",
    "cost_text",
    "route_through",
    "why_not",
]

#: What :func:`why_not` found (see the module docstring).
Verdict = Literal["unknown", "reachable", "dead", "cut"]
#: Beyond this many nodes, :meth:`WhyNot.sentences` names the first ones and counts the rest.
MAX_LISTED_NODES = 12


def cost_text(cost: float) -> str:
    """A link or route cost in milliseconds, ``cost unknown`` when it is missing.

    >>> cost_text(10.0), cost_text(2.5), cost_text(float("nan"))
    ('10 ms', '2.5 ms', 'cost unknown')
    """
    return "cost unknown" if math.isnan(cost) else f"{cost:g} ms"


@dataclass(frozen=True)
class Link:
    """One directed link of a route: live (``death`` is ``None``) or recently dead.

    >>> Link("a", "b", 10.0).describe(), Link("b", "c", 2.0, "expired", 4).describe()
    ('a → b (10 ms)', 'b → c (2 ms), expired in batch 4')
    """

    src: str
    dst: str
    cost: float
    death: str | None = None  # "deleted" or "expired"; None: live
    batch: int | None = None  # the batch the link died in

    @property
    def live(self) -> bool:
        return self.death is None

    def describe(self, name: Callable[[str], str] = str) -> str:
        """``a → b (10 ms)``, with ``, deleted in batch 7`` for a dead link; ids through
        ``name`` (e.g. a Markdown quoting function)."""
        words = f"{name(self.src)} → {name(self.dst)} ({cost_text(self.cost)})"
        if self.death is None:
            return words
        when = f" in batch {self.batch}" if self.batch is not None else ""
        return f"{words}, {self.death}{when}"


@dataclass(frozen=True)
class WhyNot:
    """The answer of :func:`why_not` for the pair ``(src, dst)``.

    ``route`` is set for the verdicts ``reachable`` and ``dead``; ``source_side`` (``src`` and
    every node it reaches), ``target_side`` (``dst`` and every node reaching it) and
    ``candidates`` (missing links ``(u, v)``, each enough alone) for ``cut``; ``missing`` names
    the ends that are no node of the network (verdict ``unknown``).
    """

    src: str
    dst: str
    verdict: Verdict
    route: tuple[Link, ...] = ()
    source_side: tuple[str, ...] = ()
    target_side: tuple[str, ...] = ()
    candidates: tuple[tuple[str, str], ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def nodes(self) -> tuple[str, ...]:
        """The route as node ids, ``src`` first (empty without a route)."""
        if not self.route:
            return ()
        return (self.route[0].src, *(link.dst for link in self.route))

    @property
    def dead_links(self) -> tuple[Link, ...]:
        """The recently dead links of the route, in route order."""
        return tuple(link for link in self.route if not link.live)

    @property
    def cost(self) -> float:
        """The route's total cost (a right fold, as the path views add costs; NaN: unknown)."""
        total = 0.0
        for link in reversed(self.route):
            total = link.cost + total
        return total

    def sentences(self, name: Callable[[str], str] = str) -> list[str]:
        """The answer in plain English, one line per item; ids go through ``name`` (pass a
        Markdown quoting function to show the lines as Markdown).

        >>> print("\\n".join(why_not("a", "d", [("a", "b", 1.0), ("c", "d", 1.0)], []).sentences()))
        a cannot reach d, not even through recently dead links.
        Group 1, a and the nodes it reaches through live or recently dead links (2 nodes): a, b.
        Group 2, d and the nodes that reach it (2 nodes): c, d.
        No link, live or recently dead, goes from group 1 to group 2.
        Any one of these missing links would connect them: a → d, a → c, b → d, b → c.
        """
        src, dst = name(self.src), name(self.dst)
        target = "itself" if self.src == self.dst else dst
        if self.verdict == "unknown":
            return [
                f"{name(node)} is not a node of the network: no live or recently dead link starts "
                "or ends there."
                for node in self.missing
            ]
        route = f"{' → '.join(map(name, self.nodes))} ({cost_text(self.cost)})"
        if self.verdict == "reachable":
            return [
                f"{src} reaches {target} over live links now: {route}.",
                "The view may not have caught up with the latest links yet.",
            ]
        lines = [f"{src} cannot reach {target} over live links."]
        if self.src == self.dst:
            lines.append("A node reaches itself only around a cycle of at least one link.")
        if self.verdict == "dead":
            dead = self.dead_links
            plural = "link" if len(dead) == 1 else "links"
            lines.append(
                f"The route needing the fewest recently dead links is {route}; it needs "
                f"{len(dead)} dead {plural}:"
            )
            lines += [link.describe(name) for link in dead]
            return lines
        lines[0] = f"{src} cannot reach {target}, not even through recently dead links."
        lines += [
            f"Group 1, {src} and the nodes it reaches through live or recently dead links "
            f"{_nodes_text(self.source_side, name)}.",
            f"Group 2, {dst} and the nodes that reach it {_nodes_text(self.target_side, name)}.",
            "No link, live or recently dead, goes from group 1 to group 2.",
        ]
        if self.candidates:
            links = ", ".join(f"{name(u)} → {name(v)}" for u, v in self.candidates)
            lines.append(f"Any one of these missing links would connect them: {links}.")
        return lines


def _nodes_text(nodes: Sequence[str], name: Callable[[str], str]) -> str:
    """``(3 nodes): a, b, c`` (the first :data:`MAX_LISTED_NODES`, then how many more)."""
    shown = ", ".join(name(node) for node in nodes[:MAX_LISTED_NODES])
    more = len(nodes) - MAX_LISTED_NODES
    if more > 0:
        shown += f" and {more} more"
    return f"({len(nodes)} node{'' if len(nodes) == 1 else 's'}): {shown}"


def _cost(value: object) -> float:
    """A cost as a float (NaN when missing or not a number)."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _links(
    live_links: Iterable[Sequence[object]], dead_links: Iterable[Sequence[object]]
) -> dict[str, dict[str, Link]]:
    """``src → dst → Link``: per directed pair the cheapest live link, else the cheapest dead
    one (the latest death on a tie); a pair that is live is never dead."""
    out: dict[str, dict[str, Link]] = {}

    def better(new: Link, old: Link | None) -> bool:
        if old is None:
            return True
        return (not new.live, _weight(new), -(new.batch or 0)) < (
            not old.live, _weight(old), -(old.batch or 0))

    for src, dst, cost, *_ in live_links:
        link = Link(str(src), str(dst), _cost(cost))
        if better(link, out.get(link.src, {}).get(link.dst)):
            out.setdefault(link.src, {})[link.dst] = link
    for src, dst, cost, death, batch, *_ in dead_links:
        kind = death if isinstance(death, str) and death else "deleted"
        link = Link(str(src), str(dst), _cost(cost), kind, _batch(batch))
        if better(link, out.get(link.src, {}).get(link.dst)):
            out.setdefault(link.src, {})[link.dst] = link
    return out


def _batch(value: object) -> int | None:
    """A batch number as an int (``None`` when missing: None, NaN or a null of pandas)."""
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None


def _weight(link: Link) -> float:
    """The cost a search adds for ``link`` (a missing or negative cost adds 0)."""
    return link.cost if link.cost > 0 else 0.0


#: A search key: (dead links, cost, links), compared in that order.
_Key = tuple[int, float, int]


def _add(link: Link, rest: _Key) -> _Key:
    return (rest[0] + (0 if link.live else 1), _weight(link) + rest[1], rest[2] + 1)


def _best_to(dst: str, into: Mapping[str, list[Link]]) -> dict[str, _Key]:
    """Backward Dijkstra: node → the best key of a route (≥ 0 links) from it to ``dst``."""
    best: dict[str, _Key] = {dst: (0, 0.0, 0)}
    heap: list[tuple[_Key, str]] = [((0, 0.0, 0), dst)]
    while heap:
        key, node = heapq.heappop(heap)
        if key > best[node]:
            continue
        for link in into.get(node, ()):
            candidate = _add(link, key)
            if link.src not in best or candidate < best[link.src]:
                best[link.src] = candidate
                heapq.heappush(heap, (candidate, link.src))
    return best


def _hops(start: str, step: Callable[[str], Iterable[str]]) -> dict[str, int]:
    """Breadth-first hop counts from ``start`` (0 for ``start`` itself)."""
    hops = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(step(node)):
            if nxt not in hops:
                hops[nxt] = hops[node] + 1
                queue.append(nxt)
    return hops


def why_not(
    src: str,
    dst: str,
    live_links: Iterable[Sequence[object]],
    dead_links: Iterable[Sequence[object]] = (),
    max_candidates: int = 5,
) -> WhyNot:
    """Why ``dst`` is not reachable from ``src``: see the module docstring for the verdicts.

    ``live_links`` are ``(src, dst, cost)`` directed live links, ``dead_links`` recently dead
    ones ``(src, dst, cost, death, batch)`` (``death`` ``"deleted"`` or ``"expired"``); several
    links of one pair count as its cheapest, and a dead pair that is live again as live. The
    answer is deterministic: it does not depend on the order of the links. At most
    ``max_candidates`` missing links are suggested, those giving the shortest routes first.

    >>> why_not("a", "c", [("a", "b", 1.0), ("b", "c", 2.0)], []).verdict
    'reachable'
    >>> why_not("a", "z", [("a", "b", 1.0)], []).missing
    ('z',)
    >>> why_not("a", "a", [("a", "b", 1.0)], [("b", "a", 1.0, "expired", 3)]).nodes
    ('a', 'b', 'a')
    """
    src, dst = str(src), str(dst)
    out_of = _links(live_links, dead_links)
    into: dict[str, list[Link]] = {}
    for targets in out_of.values():
        for link in targets.values():
            into.setdefault(link.dst, []).append(link)
    nodes = set(out_of) | set(into)
    missing = tuple(sorted({src, dst} - nodes))
    if missing:
        return WhyNot(src, dst, "unknown", missing=missing)

    best = _best_to(dst, into)
    # the first link is always taken, so that src == dst needs a cycle of at least one link
    first = [(_add(link, best[link.dst]), link.dst, link)
             for link in out_of.get(src, {}).values() if link.dst in best]
    if first:
        _, _, link = min(first, key=lambda item: item[:2])
        route = [link]
        while route[-1].dst != dst:  # each step: the best key, then the smallest node id
            here = route[-1].dst
            steps = [(_add(link, best[link.dst]), link.dst, link)
                     for link in out_of[here].values() if link.dst in best]
            route.append(min(steps, key=lambda item: item[:2])[2])
        verdict: Verdict = "reachable" if all(link.live for link in route) else "dead"
        return WhyNot(src, dst, verdict, route=tuple(route))

    from_src = _hops(src, lambda node: out_of.get(node, {}).keys())
    to_dst = _hops(dst, lambda node: (link.src for link in into.get(node, ())))
    # no link joins the two sides (else a route would exist): any one added link would; prefer
    # links between distinct nodes, then the shortest resulting route, then node ids
    pairs = sorted(
        ((u == v, from_src[u] + to_dst[v], u, v) for u in from_src for v in to_dst),
    )
    candidates = tuple((u, v) for _, _, u, v in pairs[: max(max_candidates, 0)])
    return WhyNot(
        src,
        dst,
        "cut",
        source_side=tuple(sorted(from_src)),
        target_side=tuple(sorted(to_dst)),
        candidates=candidates,
    )


def route_through(links: Iterable[tuple[str, str]], src: str, dst: str) -> list[str] | None:
    """The route ``src → … → dst`` that ``links`` form, as node ids; ``None`` when they form no
    single route from ``src`` to ``dst`` using each link once (e.g. a witness of another shape).

    >>> route_through([("b", "c"), ("a", "b")], "a", "c")
    ['a', 'b', 'c']
    >>> route_through([("a", "b"), ("b", "a")], "a", "a")
    ['a', 'b', 'a']
    >>> route_through([("a", "b"), ("x", "y")], "a", "b") is None
    True
    """
    pending = sorted(set(links))
    if not pending:
        return None
    path = [src]
    while pending:
        steps = [pair for pair in pending if pair[0] == path[-1]]
        if len(steps) != 1:
            return None
        pending.remove(steps[0])
        path.append(steps[0][1])
    return path if path[-1] == dst else None
