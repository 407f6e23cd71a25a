"""Update workloads: lists of update records for the experiments of Liu et al. 2008.

* :func:`fraction_inserts` / :func:`fraction_batches` — insert a fraction of the links in random
  order (Liu et al. 2008, Fig. 7: 0.25 … 1.0 of the 400 link tuples, incrementally).
* :func:`delete_one_batches` — insert everything, then delete link tuples one at a time, each in
  its own batch (Fig. 8; ``fraction`` < 1 for Fig. 12's "extra 20 %").
* :func:`churn` — a stream of deletes, re-inserts and TTL renewals with advancing ``event_time``;
  some inserts carry ``ttl_s`` and expire inside the stream.
* :func:`sensor_batches` — sensors and region seeds, seeds triggered, then half of the other
  sensors triggered and later un-triggered, in random order (§7.1, workload 2).

Links are bidirectional: every link operation emits its two directed records next to each
other (``a→b`` then ``b→a``), except :func:`delete_one_batches` with ``unit="tuple"``, which
deletes directed tuples one by one as the paper does. Liveness follows decision 4
(docs/architecture.md): a delete kills every instance of the tuple; an instance with ``ttl_s``
inserted at ``t`` is live while ``now < t + ttl_s``; a re-insert of a live tuple is a renewal.
:func:`live_tuples` replays a record list with these rules.

>>> from aspen.generators.topology import transit_stub
>>> topo = transit_stub(seed=1)
>>> len(fraction_inserts(topo, 0.25, seed=2))
100
>>> batches = delete_one_batches(topo, seed=2)
>>> len(batches), len(batches[0]), batches[1][0]["op"]
(401, 400, 'delete')
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aspen.errors import ConfigError
from aspen.generators.invalid import INVALID_KINDS, inject_invalid, inject_invalid_labeled
from aspen.generators.records import (
    Record,
    iso_time,
    link_delete,
    link_insert,
    parse_time,
    region_seed_insert,
    sensor_insert,
    triggered_delete,
    triggered_insert,
    tuple_key,
)
from aspen.generators.sensors import SensorGrid
from aspen.generators.topology import Topology
from aspen.generators.writers import write_csv, write_jsonl, write_records

__all__ = [
    "DEFAULT_START",
    "DEFAULT_FRACTIONS",
    "ChurnParams",
    "link_inserts",
    "fraction_inserts",
    "fraction_batches",
    "delete_one_batches",
    "churn",
    "sensor_batches",
    "stamp_event_times",
    "live_tuples",
    "split_batches",
    # re-exported from aspen.generators.writers / .invalid
    "write_jsonl",
    "write_csv",
    "write_records",
    "inject_invalid",
    "inject_invalid_labeled",
    "INVALID_KINDS",
]

#: Default start of generated event times (fixed, so output is reproducible).
DEFAULT_START = "2025-01-01T00:00:00Z"
#: The insertion ratios of Liu et al. 2008, Fig. 7.
DEFAULT_FRACTIONS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)

Pair = tuple[str, str, float]


def _check_fraction(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
        raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}")


def _shuffled_pairs(topology: Topology, seed: int) -> list[Pair]:
    pairs = topology.undirected()
    random.Random(seed).shuffle(pairs)
    return pairs


def _insert_pair(pair: Pair, **extra: Any) -> list[Record]:
    a, b, cost = pair
    return [link_insert(a, b, cost, **extra), link_insert(b, a, cost, **extra)]


def link_inserts(topology: Topology, *, seed: int | None = None) -> list[Record]:
    """Insert records for every link tuple (generation order, or shuffled by ``seed``).

    >>> from aspen.generators.topology import transit_stub
    >>> len(link_inserts(transit_stub(seed=0)))
    400
    """
    pairs = topology.undirected() if seed is None else _shuffled_pairs(topology, seed)
    return [record for pair in pairs for record in _insert_pair(pair)]


def fraction_inserts(topology: Topology, fraction: float, *, seed: int = 0) -> list[Record]:
    """Insert a random ``fraction`` of the bidirectional links (both directions each), shuffled.

    ``round(fraction · links)`` links, so ``2 · round(fraction · links)`` records. The same
    ``seed`` gives nested prefixes: the 0.25 workload is the start of the 0.5 workload.

    >>> from aspen.generators.topology import transit_stub
    >>> len(fraction_inserts(transit_stub(seed=0), 0.5, seed=1))
    200
    """
    _check_fraction("fraction", fraction)
    pairs = _shuffled_pairs(topology, seed)
    return [r for pair in pairs[: round(fraction * len(pairs))] for r in _insert_pair(pair)]


def fraction_batches(
    topology: Topology, fractions: Sequence[float] = DEFAULT_FRACTIONS, *, seed: int = 0
) -> list[list[Record]]:
    """Incremental batches: after batch ``i`` exactly ``fractions[i]`` of the links are inserted.

    >>> from aspen.generators.topology import transit_stub
    >>> [len(b) for b in fraction_batches(transit_stub(seed=0), seed=1)]
    [100, 100, 100, 100]
    """
    previous = 0.0
    for value in fractions:
        _check_fraction("fraction", value)
        if value < previous:
            raise ConfigError(f"fractions must not decrease, got {list(fractions)}")
        previous = value
    pairs = _shuffled_pairs(topology, seed)
    batches: list[list[Record]] = []
    done = 0
    for value in fractions:
        upto = round(value * len(pairs))
        batches.append([r for pair in pairs[done:upto] for r in _insert_pair(pair)])
        done = upto
    return batches


def delete_one_batches(
    topology: Topology,
    *,
    seed: int = 0,
    fraction: float = 1.0,
    unit: Literal["tuple", "link"] = "tuple",
) -> list[list[Record]]:
    """Batch 0 inserts every link tuple; each later batch deletes one tuple (or one link).

    ``unit="tuple"`` (the paper) deletes directed tuples one per batch, in random order;
    ``unit="link"`` deletes both directions of one link per batch. ``fraction`` of the
    tuples/links are deleted (1.0 = all, so the network ends empty).

    >>> from aspen.generators.topology import transit_stub
    >>> len(delete_one_batches(transit_stub(seed=0), unit="link", fraction=0.1))
    21
    """
    _check_fraction("fraction", fraction)
    if unit not in ("tuple", "link"):
        raise ConfigError(f"unit must be 'tuple' or 'link', got {unit!r}")
    rng = random.Random(seed)
    inserts = link_inserts(topology, seed=rng.randrange(2**32))
    if unit == "tuple":
        tuples = [(link.src, link.dst) for link in topology.links]
        rng.shuffle(tuples)
        chosen = tuples[: round(fraction * len(tuples))]
        return [inserts] + [[link_delete(a, b)] for a, b in chosen]
    pairs = topology.undirected()
    rng.shuffle(pairs)
    chosen_pairs = pairs[: round(fraction * len(pairs))]
    return [inserts] + [[link_delete(a, b), link_delete(b, a)] for a, b, _ in chosen_pairs]


@dataclass(frozen=True)
class ChurnParams:
    """Knobs of :func:`churn`. Action weights are relative; invalid values raise ConfigError."""

    events: int = 200
    delete_weight: float = 0.4
    reinsert_weight: float = 0.4
    renew_weight: float = 0.2
    ttl_fraction: float = 0.3  # share of inserts (and all renewals) that carry ttl_s
    ttl_min_s: int = 30
    ttl_max_s: int = 300
    mean_step_s: float = 1.0  # mean gap between events; gaps are uniform in [0.5, 1.5]·mean
    stale_delete_prob: float = 0.0  # deletes of already dead links, on purpose
    initial_insert: bool = True  # start by inserting every link (no ttl); else assume all live
    start: str = DEFAULT_START

    def __post_init__(self) -> None:
        if not isinstance(self.events, int) or self.events < 0:
            raise ConfigError(f"events must be an integer ≥ 0, got {self.events!r}")
        weights = (self.delete_weight, self.reinsert_weight, self.renew_weight)
        if any(not (math.isfinite(w) and w >= 0) for w in weights) or sum(weights) <= 0:
            raise ConfigError(f"action weights must be ≥ 0 with a positive sum, got {weights}")
        _check_fraction("ttl-fraction", self.ttl_fraction)
        _check_fraction("stale-delete-prob", self.stale_delete_prob)
        if not (isinstance(self.ttl_min_s, int) and 1 <= self.ttl_min_s <= self.ttl_max_s):
            raise ConfigError(
                f"need integers 1 ≤ ttl-min ≤ ttl-max, got {self.ttl_min_s}, {self.ttl_max_s}"
            )
        if not (math.isfinite(self.mean_step_s) and self.mean_step_s > 0):
            raise ConfigError(f"mean step must be a positive number, got {self.mean_step_s!r}")
        parse_time(self.start)


class _LinkState:
    """Liveness of each bidirectional link: live while ``now < live_until``."""

    def __init__(self, pairs: list[Pair], live: bool) -> None:
        self.pairs = pairs
        self.live_until = [math.inf if live else -math.inf for _ in pairs]
        self.ever = [live for _ in pairs]

    def pick(self, rng: random.Random, accept: Any) -> int | None:
        count = len(self.pairs)
        for _ in range(32):
            index = rng.randrange(count)
            if accept(index):
                return index
        matches = [i for i in range(count) if accept(i)]
        return rng.choice(matches) if matches else None


def churn(topology: Topology, params: ChurnParams | None = None, *, seed: int = 0) -> list[Record]:
    """A churn stream over ``topology``'s links; every record has ``event_time``.

    Each event is, by weight: delete a live link; (re-)insert a dead link (expired, deleted or
    never inserted), with ``ttl_s`` for a ``ttl_fraction`` share; renew a live link that has a
    TTL (insert again with a new ``ttl_s``). An action without a candidate falls back to
    another. With ``stale_delete_prob`` > 0 that share of the deletes names a dead link on
    purpose (a late delete after an expiry); otherwise every delete names a live link.

    >>> from aspen.generators.topology import transit_stub
    >>> stream = churn(transit_stub(seed=0), ChurnParams(events=50), seed=3)
    >>> len(stream) == 400 + 2 * 50, {r["op"] for r in stream[400:]} <= {"insert", "delete"}
    (True, True)
    """
    params = params or ChurnParams()
    rng = random.Random(seed)
    pairs = topology.undirected()
    state = _LinkState(pairs, live=not params.initial_insert)
    now = parse_time(params.start)
    records: list[Record] = []
    if params.initial_insert:
        stamp = iso_time(now)
        for index, pair in enumerate(pairs):
            records.extend(_insert_pair(pair, event_time=stamp))
            state.live_until[index] = math.inf
            state.ever[index] = True
    actions = ("delete", "reinsert", "renew")
    weights = (params.delete_weight, params.reinsert_weight, params.renew_weight)
    for _ in range(params.events):
        now += round(rng.uniform(0.5, 1.5) * params.mean_step_s, 3)
        stamp = iso_time(now)

        def live(i: int, at: float = now) -> bool:
            return state.live_until[i] > at

        def dead(i: int, at: float = now) -> bool:
            return state.live_until[i] <= at

        def renewable(i: int, at: float = now) -> bool:
            return at < state.live_until[i] < math.inf

        def stale(i: int, at: float = now) -> bool:
            return state.ever[i] and state.live_until[i] <= at

        wanted = rng.choices(actions, weights)[0]
        order = [wanted] + [a for a in ("reinsert", "delete", "renew") if a != wanted]
        for action in order:
            if action == "delete":
                on_purpose = params.stale_delete_prob and rng.random() < params.stale_delete_prob
                index = state.pick(rng, stale if on_purpose else live)
                if index is None:
                    continue
                a, b, _ = pairs[index]
                records += [
                    link_delete(a, b, event_time=stamp),
                    link_delete(b, a, event_time=stamp),
                ]
                state.live_until[index] = -math.inf
                break
            if action in ("reinsert", "renew"):
                index = state.pick(rng, dead if action == "reinsert" else renewable)
                if index is None:
                    continue
                with_ttl = action == "renew" or rng.random() < params.ttl_fraction
                ttl = rng.randint(params.ttl_min_s, params.ttl_max_s) if with_ttl else None
                records += _insert_pair(pairs[index], ttl_s=ttl, event_time=stamp)
                until = math.inf if ttl is None else now + ttl
                current = state.live_until[index] if live(index) else -math.inf
                state.live_until[index] = max(current, until)
                state.ever[index] = True
                break
    return records


def sensor_batches(
    grid: SensorGrid,
    *,
    seed: int = 0,
    trigger_fraction: float = 0.5,
    batch_size: int | None = None,
) -> list[list[Record]]:
    """The region workload as batches: setup, trigger batches, then un-trigger batches.

    Batch 0 inserts every sensor, the region seeds, and triggers the seed sensors. Then
    ``round(trigger_fraction · non-seed sensors)`` random non-seed sensors are triggered, in
    random order, ``batch_size`` per batch (default: all in one batch); then the same sensors are
    un-triggered in a fresh random order, batched the same way. Seeds stay triggered.

    >>> from aspen.generators.sensors import sensor_grid
    >>> [len(b) for b in sensor_batches(sensor_grid(), seed=1)]
    [110, 48, 48]
    """
    _check_fraction("trigger fraction", trigger_fraction)
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ConfigError(f"batch size must be an integer ≥ 1, got {batch_size!r}")
    rng = random.Random(seed)
    setup: list[Record] = [sensor_insert(s.id, s.x, s.y) for s in grid.sensors]
    setup += [region_seed_insert(r.region, r.id) for r in grid.seeds]
    seed_ids = list(dict.fromkeys(r.id for r in grid.seeds))
    setup += [triggered_insert(sensor_id) for sensor_id in seed_ids]
    others = [s.id for s in grid.sensors if s.id not in set(seed_ids)]
    triggered = rng.sample(others, round(trigger_fraction * len(others)))
    untriggered = rng.sample(triggered, len(triggered))
    size = batch_size or max(1, len(triggered))
    trigger = [triggered_insert(s) for s in triggered]
    untrigger = [triggered_delete(s) for s in untriggered]
    return [setup, *split_batches(trigger, size), *split_batches(untrigger, size)]


def split_batches(records: Sequence[Record], size: int) -> list[list[Record]]:
    """Consecutive batches of at most ``size`` records (none for no records).

    >>> split_batches([1, 2, 3], 2)
    [[1, 2], [3]]
    """
    if not isinstance(size, int) or size < 1:
        raise ConfigError(f"batch size must be an integer ≥ 1, got {size!r}")
    return [list(records[i : i + size]) for i in range(0, len(records), size)]


def stamp_event_times(
    batches: Sequence[Sequence[Record]], start: str = DEFAULT_START, step_s: float = 1.0
) -> list[list[Record]]:
    """Copies of ``batches`` whose records get ``event_time`` = start + batch index · step.

    >>> stamp_event_times([[{"op": "insert"}], [{"op": "delete"}]])[1][0]["event_time"]
    '2025-01-01T00:00:01.000Z'
    """
    origin = parse_time(start)
    return [
        [{**record, "event_time": iso_time(origin + n * step_s)} for record in batch]
        for n, batch in enumerate(batches)
    ]


def live_tuples(records: Iterable[Record], at: str | None = None) -> set[tuple[str, tuple]]:
    """Replay valid ``records`` in order; the base tuples live at time ``at`` (default: the end).

    A record without ``event_time`` happens at the previous record's time (TTLs before the
    first ``event_time`` cannot be placed in time and never expire). A tuple is live
    while some instance is: no TTL, or ``now < event_time + ttl_s``; a delete kills them all.

    >>> live_tuples([link_insert("a", "b", 1.0, ttl_s=5, event_time="2025-01-01T00:00:00Z")],
    ...             at="2025-01-01T00:00:06Z")
    set()
    """
    live_until: dict[tuple[str, tuple], float] = {}
    now = -math.inf
    for record in records:
        if "event_time" in record:
            now = parse_time(record["event_time"])
        key = tuple_key(record)
        if record["op"] == "delete":
            live_until.pop(key, None)
            continue
        ttl = record.get("ttl_s")
        until = math.inf if ttl is None or now == -math.inf else now + float(ttl)
        current = live_until.get(key, -math.inf)
        live_until[key] = max(current if current > now else -math.inf, until)
    final = now if at is None else parse_time(at)
    return {key for key, until in live_until.items() if until > final}
