"""Choosing among instrumentation alternatives by cost (seed 001, §4.4–§5): the pipeline that
makes a plan calls a choice callback at each choice point; a plan is identified by the options
taken, in order (its *path*); a search generates plans along paths, costs each, keeps the best.

- :class:`Chooser` — the callback for one run of the pipeline: it follows a forced prefix of
  options, then takes option 0 (or a random one), and records the points it met.
- :func:`next_path` — the next plan of the sequential leaf traversal (Alg. 3): bump the latest
  choice that has an unused option; ``None`` when the space is exhausted.
- :func:`search` — ``exhaustive`` (every plan, at most ``limit``), ``annealing`` (random single
  choice changes, a worse plan accepted with probability ``exp(-Δ/T)``, ``T`` cooled by
  ``cooling`` each step), each optionally **adaptive**: stop as soon as the best plan's
  estimated run time is below the time spent optimizing (2-competitive when an iteration's
  time is bounded). Costs are estimated seconds; the clock is injectable for tests. Of plans
  whose costs differ by less than :data:`TIE` (2 %), the first tried is kept.

>>> def generate(choose):
...     return (choose("a", ("x", "y")), choose("b", ("x", "y", "z")))
>>> found = search(generate, lambda plan: float(abs(plan[0] - 1) + plan[1]), "exhaustive")
>>> found.best.plan, found.best.cost, len(found.tried)
((1, 0), 0.0, 6)
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from aspen.errors import ConfigError

__all__ = ["STRATEGIES", "TIE", "ChoicePoint", "Chooser", "Search", "Tried", "next_path", "search"]

P = TypeVar("P")

#: Relative difference under which two estimated costs count as equal.
TIE = 0.02
#: The search strategies by name (``adaptive`` is exhaustive with the adaptive stop).
STRATEGIES = ("exhaustive", "annealing", "adaptive", "annealing-adaptive")


@dataclass(frozen=True)
class ChoicePoint:
    """One choice point met: its label, its options, the option taken."""

    label: str
    options: tuple[str, ...]
    taken: int

    def describe(self) -> str:
        """``label: option`` as one line."""
        return f"{self.label}: {self.options[self.taken]}"


class Chooser:
    """The choice callback of one pipeline run: options of ``forced`` first, then option 0
    (or, with ``rng``, a random option); the points met are kept in ``points``.

    >>> c = Chooser((1,))
    >>> c("agg", ("join-back", "window")), c("scan", ("early", "late"))
    (1, 0)
    >>> c.path, c.sizes
    ((1, 0), (2, 2))
    """

    def __init__(self, forced: Sequence[int] = (), rng: random.Random | None = None) -> None:
        self.forced = tuple(forced)
        self.rng = rng
        self.points: list[ChoicePoint] = []

    def __call__(self, label: str, options: tuple[str, ...]) -> int:
        i = len(self.points)
        if i < len(self.forced):
            taken = min(self.forced[i], len(options) - 1)
        elif self.rng is not None:
            taken = self.rng.randrange(len(options))
        else:
            taken = 0
        self.points.append(ChoicePoint(label, options, taken))
        return taken

    @property
    def path(self) -> tuple[int, ...]:
        return tuple(p.taken for p in self.points)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(p.options) for p in self.points)


def next_path(path: Sequence[int], sizes: Sequence[int]) -> tuple[int, ...] | None:
    """The prefix forced on the next run of the sequential leaf traversal, or None when every
    plan has been generated.

    >>> next_path((0, 1), (2, 2)), next_path((1, 1, 1), (2, 2, 2))
    ((1,), None)
    """
    prefix, counts = list(path), list(sizes)
    while prefix:
        c, k = prefix.pop(), counts.pop()
        if c + 1 < k:
            return (*prefix, c + 1)
    return None


@dataclass(frozen=True)
class Tried(Generic[P]):
    """A plan generated: its path, the points met, its estimated cost (seconds)."""

    path: tuple[int, ...]
    points: tuple[ChoicePoint, ...]
    cost: float
    plan: P


@dataclass
class Search(Generic[P]):
    """A search's outcome: the plans tried in order, the best, the strategy, the seconds spent,
    and whether the adaptive stop ended it before the space (or the limit) did."""

    strategy: str
    tried: list[Tried[P]] = field(default_factory=list)
    seconds: float = 0.0
    stopped_early: bool = False

    @property
    def best(self) -> Tried[P]:
        """The first plan tried whose cost is within :data:`TIE` of the least: estimates that
        close are noise, and earlier plans are the heuristic ones."""
        least = min(t.cost for t in self.tried)
        return next(t for t in self.tried if t.cost <= least + abs(least) * TIE)


def search(generate: Callable[[Chooser], P], cost: Callable[[P], float],
           strategy: str = "adaptive", limit: int = 64, seed: int = 0, cooling: float = 0.5,
           clock: Callable[[], float] = time.perf_counter) -> Search[P]:
    """The cheapest plan ``generate`` makes, by ``cost``, searched by ``strategy``
    (:data:`STRATEGIES`), at most ``limit`` plans costed.

    >>> found = search(lambda choose: choose("a", ("x", "y")), lambda p: 1.0 - p, "annealing")
    >>> found.best.plan
    1
    """
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown search strategy {strategy!r}; choose one of "
                          f"{', '.join(STRATEGIES)}")
    if limit < 1:
        raise ConfigError(f"the search needs a limit of at least 1 plan, got {limit}")
    adaptive = strategy.endswith("adaptive")
    out: Search[P] = Search(strategy)
    seen: dict[tuple[int, ...], Tried[P]] = {}
    start = clock()

    def run(chooser: Chooser) -> Tried[P]:
        plan = generate(chooser)
        path = chooser.path
        if path not in seen:
            seen[path] = Tried(path, tuple(chooser.points), cost(plan), plan)
            out.tried.append(seen[path])
        return seen[path]

    def stop() -> bool:
        out.seconds = clock() - start
        if len(out.tried) >= limit:
            return True
        if adaptive and out.best.cost < out.seconds:
            out.stopped_early = True
            return True
        return False

    if strategy.startswith("annealing"):
        rng = random.Random(seed)
        current = run(Chooser(rng=rng))
        temperature = max(current.cost, 1e-12)
        steps = 0
        while not stop() and current.path and steps < 4 * limit:
            steps += 1
            j = rng.randrange(len(current.path))
            others = [o for o in range(current.points[j].options.__len__())
                      if o != current.path[j]]
            forced = (*current.path[:j], rng.choice(others), *current.path[j + 1:])
            candidate = run(Chooser(forced))
            delta = candidate.cost - current.cost
            if delta <= 0 or rng.random() < math.exp(-delta / max(temperature, 1e-12)):
                current = candidate
            temperature *= 1.0 - cooling
        out.seconds = clock() - start
        return out
    forced: tuple[int, ...] | None = ()
    while forced is not None:
        tried = run(Chooser(forced))
        if stop():
            break
        forced = next_path(tried.path, [len(p.options) for p in tried.points])
    out.seconds = clock() - start
    return out
