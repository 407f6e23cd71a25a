"""Update workloads: fractions, delete-one-at-a-time, churn with TTLs, sensor triggers."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from gen_record_rules import problem

from aspen.errors import ConfigError
from aspen.generators.records import parse_time
from aspen.generators.sensors import sensor_grid
from aspen.generators.topology import TransitStubParams, transit_stub
from aspen.generators.workloads import (
    ChurnParams,
    churn,
    delete_one_batches,
    fraction_batches,
    fraction_inserts,
    link_inserts,
    live_tuples,
    sensor_batches,
    split_batches,
    stamp_event_times,
)

TOPOLOGY = transit_stub(seed=4)
ALL_TUPLES = {(link.src, link.dst) for link in TOPOLOGY.links}


def pairs_of(records: list[dict]) -> set[tuple[str, str]]:
    return {(r["src"], r["dst"]) for r in records}


@pytest.mark.parametrize(("fraction", "count"), [(0.25, 100), (0.5, 200), (0.75, 300), (1.0, 400)])
def test_fraction_inserts_counts(fraction: float, count: int) -> None:
    records = fraction_inserts(TOPOLOGY, fraction, seed=1)
    assert len(records) == count
    assert all(r["op"] == "insert" and r["relation"] == "link" for r in records)
    assert all(problem(r) is None for r in records)
    tuples = pairs_of(records)
    assert len(tuples) == count and tuples <= ALL_TUPLES
    assert all((b, a) in tuples for a, b in tuples), "a link inserted in one direction only"
    costs = {(link.src, link.dst): link.cost for link in TOPOLOGY.links}
    assert all(r["cost"] == costs[(r["src"], r["dst"])] for r in records)


def test_fractions_are_nested_random_and_seeded() -> None:
    quarter = fraction_inserts(TOPOLOGY, 0.25, seed=1)
    half = fraction_inserts(TOPOLOGY, 0.5, seed=1)
    assert half[: len(quarter)] == quarter
    assert fraction_inserts(TOPOLOGY, 1.0, seed=1) != link_inserts(TOPOLOGY)  # shuffled
    assert fraction_inserts(TOPOLOGY, 0.5, seed=2) != half
    batches = fraction_batches(TOPOLOGY, seed=1)
    assert [len(b) for b in batches] == [100, 100, 100, 100]
    assert [r for b in batches for r in b][:200] == half
    assert pairs_of([r for b in batches for r in b]) == ALL_TUPLES
    with pytest.raises(ConfigError):
        fraction_batches(TOPOLOGY, [0.5, 0.25])
    with pytest.raises(ConfigError):
        fraction_inserts(TOPOLOGY, 1.5)


def test_delete_one_at_a_time_covers_every_link_tuple() -> None:
    batches = delete_one_batches(TOPOLOGY, seed=3)
    inserts, deletes = batches[0], batches[1:]
    assert {r["op"] for r in inserts} == {"insert"} and pairs_of(inserts) == ALL_TUPLES
    assert len(inserts) == 400 and len(deletes) == 400
    assert all(len(batch) == 1 and batch[0]["op"] == "delete" for batch in deletes)
    deleted = [(b[0]["src"], b[0]["dst"]) for b in deletes]
    assert len(set(deleted)) == 400 and set(deleted) == ALL_TUPLES
    assert all(problem(r) is None for batch in batches for r in batch)
    assert delete_one_batches(TOPOLOGY, seed=3) == batches
    assert delete_one_batches(TOPOLOGY, seed=4)[1:] != deletes


def test_delete_one_by_link_and_by_fraction() -> None:
    batches = delete_one_batches(TOPOLOGY, seed=3, unit="link", fraction=0.2)
    assert len(batches) == 1 + 40
    for batch in batches[1:]:
        (a, b), (c, d) = [(r["src"], r["dst"]) for r in batch]
        assert (a, b) == (d, c)
    assert len(delete_one_batches(TOPOLOGY, fraction=0.2)) == 1 + 80


def replay_checking_deletes(records: list[dict]) -> tuple[int, int]:
    """Independent liveness replay: (deletes of live tuples, deletes of dead tuples)."""
    until: dict[tuple[str, str], float] = {}
    live_deletes = dead_deletes = 0
    for record in records:
        now = parse_time(record["event_time"])
        key = (record["src"], record["dst"])
        alive = until.get(key, -math.inf) > now
        if record["op"] == "delete":
            live_deletes += alive
            dead_deletes += not alive
            until[key] = -math.inf
        else:
            end = now + record["ttl_s"] if "ttl_s" in record else math.inf
            until[key] = max(until[key] if alive else -math.inf, end)
    return live_deletes, dead_deletes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_churn_deletes_only_live_tuples(seed: int) -> None:
    records = churn(TOPOLOGY, ChurnParams(events=300, ttl_fraction=0.5), seed=seed)
    assert all(problem(r) is None for r in records)
    assert records[:400] == [dict(r, event_time=records[0]["event_time"]) for r in records[:400]]
    times = [parse_time(r["event_time"]) for r in records]
    assert times == sorted(times)
    live_deletes, dead_deletes = replay_checking_deletes(records)
    assert live_deletes > 50 and dead_deletes == 0
    ops = Counter((r["op"], "ttl_s" in r) for r in records[400:])
    assert ops[("delete", False)] and ops[("insert", False)] and ops[("insert", True)]
    # some TTLs run out inside the stream, so expirations happen
    end = times[-1]
    expiring = [
        r for r in records if "ttl_s" in r and parse_time(r["event_time"]) + r["ttl_s"] < end
    ]
    assert expiring
    # both directions of a link always move together
    for first, second in zip(records[::2], records[1::2], strict=True):
        assert (first["src"], first["dst"]) == (second["dst"], second["src"])
        assert first["op"] == second["op"] and first.get("ttl_s") == second.get("ttl_s")


def test_churn_stale_deletes_only_when_asked() -> None:
    params = ChurnParams(
        events=400, ttl_fraction=0.8, ttl_min_s=5, ttl_max_s=20, stale_delete_prob=0.5
    )
    live_deletes, dead_deletes = replay_checking_deletes(churn(TOPOLOGY, params, seed=5))
    assert dead_deletes > 0 and live_deletes > 0


def test_churn_without_initial_insert_assumes_live_links_and_is_seeded() -> None:
    params = ChurnParams(events=100, initial_insert=False, start="2030-06-01T12:00:00Z")
    records = churn(TOPOLOGY, params, seed=8)
    assert len(records) == 200
    assert parse_time(records[0]["event_time"]) > parse_time("2030-06-01T12:00:00Z")
    assert churn(TOPOLOGY, params, seed=8) == records
    assert churn(TOPOLOGY, params, seed=9) != records
    # every delete names a link of the topology, which starts live
    assert pairs_of([r for r in records if r["op"] == "delete"]) <= ALL_TUPLES


def test_churn_on_a_sparse_ten_percent_ttl_stream_keeps_live_tuples_consistent() -> None:
    sparse = transit_stub(TransitStubParams(variant="sparse"), seed=1)
    records = churn(sparse, ChurnParams(events=150), seed=3)
    live = live_tuples(records)
    assert live <= {("link", (k.src, k.dst)) for k in sparse.links}
    assert all((("link", (b, a)) in live) for _, (a, b) in live)


def test_live_tuples_applies_ttl_and_deletes() -> None:
    t0 = "2025-01-01T00:00:00Z"
    records = [
        {
            "op": "insert",
            "relation": "link",
            "src": "a",
            "dst": "b",
            "cost": 1.0,
            "ttl_s": 10,
            "event_time": t0,
        },
        {"op": "insert", "relation": "triggered", "id": "s1", "event_time": t0},
        {"op": "delete", "relation": "triggered", "id": "s1", "event_time": "2025-01-01T00:00:05Z"},
    ]
    assert live_tuples(records, at="2025-01-01T00:00:09Z") == {("link", ("a", "b"))}
    assert live_tuples(records, at="2025-01-01T00:00:10Z") == set()


def test_sensor_workload_triggers_half_then_untriggers_them() -> None:
    grid = sensor_grid(seed=2)
    setup, triggers, untriggers = sensor_batches(grid, seed=6)
    seeds = {s.id for s in grid.seeds}
    assert Counter(r["relation"] for r in setup) == {
        "sensor": 100,
        "region_seed": 5,
        "triggered": 5,
    }
    assert {r["id"] for r in setup if r["relation"] == "triggered"} == seeds
    assert all(problem(r) is None for r in setup + triggers + untriggers)
    on = [r["id"] for r in triggers]
    off = [r["id"] for r in untriggers]
    assert {r["op"] for r in triggers} == {"insert"} and {r["op"] for r in untriggers} == {"delete"}
    assert len(on) == len(set(on)) == round(0.5 * 95)
    assert set(on) == set(off) and not set(on) & seeds
    assert on != off  # un-triggered in a fresh random order
    assert sensor_batches(grid, seed=6) == [setup, triggers, untriggers]
    assert sensor_batches(grid, seed=7)[1] != triggers


def test_sensor_workload_batches_one_at_a_time() -> None:
    batches = sensor_batches(sensor_grid(), seed=1, batch_size=1)
    assert len(batches) == 1 + 48 + 48
    assert all(len(b) == 1 for b in batches[1:])


def test_helpers_split_and_stamp() -> None:
    assert split_batches(list(range(5)), 2) == [[0, 1], [2, 3], [4]]
    stamped = stamp_event_times([[{"op": "x"}], [{"op": "y"}]], "2025-01-01T00:00:00Z", 2.5)
    assert stamped[1][0]["event_time"] == "2025-01-01T00:00:02.500Z"
    with pytest.raises(ConfigError):
        split_batches([1], 0)
    with pytest.raises(ConfigError):
        ChurnParams(ttl_min_s=10, ttl_max_s=5)
    with pytest.raises(ConfigError):
        ChurnParams(start="yesterday")
