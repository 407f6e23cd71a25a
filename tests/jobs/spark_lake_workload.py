"""The workload and the oracle the Spark-runtime tests share (a helper module, not a test file).

:func:`workload` makes a first batch of links, sensors, triggers and seeds and then batches of
deletions and insertions; :func:`assert_views_exact` checks a lake's views against from-scratch
evaluation and their provenance functions against the in-process runtime's.
"""

from __future__ import annotations

import random
from pathlib import Path

from aspen.catalog import VIEWS
from aspen.engine.batch import Batch
from aspen.generators.writers import write_jsonl
from aspen.lake.committed import read_committed
from aspen.lake.deltars import read_table
from aspen.lake.ingest import ingest_files
from aspen.pipeline import ledger
from aspen.pipeline.changes import live_facts
from aspen.pipeline.verify import verify_lake
from aspen.pipeline.view_tables import row_to_tuple
from aspen.provenance.bdd import ProvenanceManager
from aspen.runtime.local import LocalRuntime
from aspen.settings import Settings

NODES = [f"n{i}" for i in range(7)]
SENSORS = [f"s{i}" for i in range(6)]


def workload(seed: int, batches: int = 3) -> list[list[dict]]:
    """A first batch of links, sensors, triggers and seeds, then batches of deletes and inserts."""
    rng = random.Random(seed)
    links = sorted({(a, b) for a, b in (rng.sample(NODES, 2) for _ in range(12))})
    first = [{"op": "insert", "relation": "link", "src": a, "dst": b,
              "cost": float(rng.randint(1, 4))} for a, b in links]
    first += [{"op": "insert", "relation": "sensor", "id": s, "x": float(10 * i), "y": 0.0}
              for i, s in enumerate(SENSORS)]
    first += [{"op": "insert", "relation": "triggered", "id": s} for s in SENSORS[:5]]
    first += [{"op": "insert", "relation": "region_seed", "region": "r1", "id": "s0"},
              {"op": "insert", "relation": "region_seed", "region": "r2", "id": "s4"}]
    out = [first]
    for _ in range(batches - 1):
        batch = [{"op": "delete", "relation": "link", "src": a, "dst": b}
                 for a, b in rng.sample(links, 2)]
        a, b = rng.sample(NODES, 2)
        batch.append({"op": "insert", "relation": "link", "src": a, "dst": b, "cost": 1.0})
        batch.append({"op": "delete", "relation": "triggered", "id": rng.choice(SENSORS[:5])})
        out.append(batch)
    return out


def ingest(spark, lake: Settings, path: Path, records: list[dict]) -> None:
    """Write ``records`` to ``path`` as JSON Lines and ingest that file into ``lake``."""
    write_jsonl(records, path)
    ingest_files(lake, [path])


def functions(lake: Settings, manager: ProvenanceManager) -> dict[str, dict[tuple, object]]:
    """Every view table: tuple → provenance function decoded into ``manager`` (None if absent)."""
    out = {}
    for view in VIEWS:
        frame = read_committed(lake, view)
        rows = {}
        for row in frame.to_dict("records"):
            key = row_to_tuple(view, row)
            assert key not in rows, f"{view}{key} stored twice"
            data = row["provenance"]
            rows[key] = None if data is None else manager.decode(bytes(data))
        out[view] = rows
    return out


def assert_views_exact(lake: Settings) -> None:
    """The lake's views equal from-scratch evaluation (``aspen verify``), and their provenance
    functions equal those of the in-process runtime run over the live registry instances."""
    assert verify_lake(lake).ok
    through = ledger.last_committed(lake).through_ingest_batch
    runtime = LocalRuntime(views=VIEWS, partitions=1)
    runtime.apply(Batch(inserts=tuple(live_facts(read_table(lake, "variables"), through))))
    runtime.flush()
    expected = {view: dict(runtime.view(view)) for view in VIEWS}
    assert functions(lake, runtime.manager) == expected
