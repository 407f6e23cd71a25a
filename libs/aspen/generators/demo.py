"""The demo input set: a 100-node network, a churn stream with a few bad records, a sensor field.

Files written to the output directory, in the order to ingest them (``manifest.json`` lists
them with their record counts):

1. ``topology.jsonl`` — inserts of every link tuple of the paper's transit-stub shape (100 nodes)
   at :data:`DEMO_AVG_DEGREE` link tuples per node (240 tuples), ``event_time`` = start. The
   paper's dense default (4.0, 400 tuples) makes all-pairs provenance BDDs explode (their build
   time grows steeply with the degree, to hours at 4.0; measurements: docs/performance.md),
   so the demo, which maintains every view, uses the lighter mesh; pass ``avg_degree`` to change it.
2. ``churn.jsonl`` — deletes, re-inserts and TTL renewals of those links (some with ``ttl_s``),
   event times after the start, with one invalid line of each kind of
   :data:`~aspen.generators.invalid.INVALID_KINDS` mixed in (they belong in quarantine).
3. ``sensors.jsonl`` — a 100 m × 100 m grid of 100 sensors, 5 region seeds (triggered), and
   :data:`DEMO_TRIGGER_FRACTION` of the other sensors triggered.
4. ``readings.jsonl`` — four minutes of readings of every sensor, every 5 s: the sensors
   ``sensors.jsonl`` triggers read around 96, the others around 70, so the default triggering
   rule (60-second averages above 90) triggers the same sensors from the readings, and
   ``aspen explain triggered`` shows the readings behind each
   (:func:`aspen.generators.readings.reading_stream`).
5. ``sensors_untrigger.jsonl`` — those sensors un-triggered, in random order.

>>> import tempfile
>>> demo = write_demo_inputs(tempfile.mkdtemp(), seed=7)
>>> [f.name for f in demo.files], demo.invalid_records
(['topology.jsonl', 'churn.jsonl', 'sensors.jsonl', 'readings.jsonl', \
'sensors_untrigger.jsonl'], 9)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from aspen.errors import ConfigError
from aspen.generators.invalid import INVALID_KINDS, inject_invalid
from aspen.generators.readings import DEMO_NETWORK, reading_stream
from aspen.generators.records import iso_time, parse_time
from aspen.generators.sensors import sensor_grid
from aspen.generators.topology import TransitStubParams, transit_stub
from aspen.generators.workloads import (
    DEFAULT_START,
    ChurnParams,
    churn,
    link_inserts,
    sensor_batches,
    stamp_event_times,
)
from aspen.generators.writers import write_jsonl

__all__ = ["DemoInputs", "write_demo_inputs"]


@dataclass(frozen=True)
class DemoInputs:
    """What :func:`write_demo_inputs` wrote."""

    directory: Path
    files: tuple[Path, ...]
    counts: dict[str, int]  # lines per file name
    invalid_records: int
    manifest: Path
    network: Path  # a stream network over the readings (JSON), for aspen stream --network


#: Link tuples per node of the demo topology (see the module docstring).
DEMO_AVG_DEGREE = 2.4
#: Share of non-seed sensors the demo triggers. The paper triggers half; on the 8-connected
#: 10 m grid with k = 20 m that is above the percolation threshold (≈0.41): the regions merge into
#: one giant cluster whose chain provenance explodes. 0.3 keeps regions local.
DEMO_TRIGGER_FRACTION = 0.3


def write_demo_inputs(
    out_dir: str | Path,
    *,
    seed: int = 0,
    churn_events: int = 200,
    start: str = DEFAULT_START,
    avg_degree: float | None = None,
) -> DemoInputs:
    """Write the demo input set into ``out_dir`` (created if missing); deterministic by ``seed``."""
    directory = Path(out_dir)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{str(directory)!r} exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    origin = parse_time(start)
    degree = DEMO_AVG_DEGREE if avg_degree is None else avg_degree
    topology = transit_stub(TransitStubParams(avg_degree=degree), seed=seed)
    links = stamp_event_times([link_inserts(topology, seed=seed)], start=start)[0]
    stream = churn(
        topology,
        ChurnParams(events=churn_events, initial_insert=False, start=iso_time(origin + 1)),
        seed=seed,
    )
    churn_lines = inject_invalid(stream, len(INVALID_KINDS), seed=seed)
    grid = sensor_grid(seed=seed)
    setup, *rest = sensor_batches(grid, seed=seed, trigger_fraction=DEMO_TRIGGER_FRACTION)
    half = len(rest) // 2
    sensors = setup + [r for batch in rest[:half] for r in batch]
    untrigger = [r for batch in rest[half:] for r in batch]
    hot = {r["id"] for r in sensors if r["relation"] == "triggered" and r["op"] == "insert"}
    readings = reading_stream(grid, hot, start=origin, seed=seed)
    contents: list[tuple[str, list]] = [
        ("topology.jsonl", links),
        ("churn.jsonl", churn_lines),
        ("sensors.jsonl", sensors),
        ("readings.jsonl", readings),
        ("sensors_untrigger.jsonl", untrigger),
    ]
    counts = {name: write_jsonl(items, directory / name) for name, items in contents}
    network = directory / "network.json"
    network.write_text(json.dumps(DEMO_NETWORK, indent=2) + "\n", encoding="utf-8")
    manifest = directory / "manifest.json"
    description = {
        "seed": seed,
        "start": start,
        "ingest_order": [name for name, _ in contents],
        "lines": counts,
        "invalid_lines": {"churn.jsonl": len(INVALID_KINDS)},
        "topology": {"nodes": len(topology.nodes), "link_tuples": len(topology.links)},
    }
    manifest.write_text(json.dumps(description, indent=2) + "\n", encoding="utf-8")
    return DemoInputs(
        directory,
        tuple(directory / name for name, _ in contents),
        counts,
        len(INVALID_KINDS),
        manifest,
        network,
    )
