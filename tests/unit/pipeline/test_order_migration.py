"""A lake whose engine state was written in arrival order (before the runtime kept a variable
order) migrates on its next maintained batch: the batch compacts, every stored formula is
rewritten in the placed order, the new state is written at once, and the next cold start
does not migrate again. Built in process (ingest, ``maintain_local``: no Spark)."""

from __future__ import annotations

import graphlib
import json
import pickle
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from aspen.lake.committed import read_committed
from aspen.lake.ingest import ingest_files
from aspen.pipeline import maintain_local as ml
from aspen.pipeline.maintain_local import ENGINE_STATE, maintain_local
from aspen.pipeline.verify import verify_lake
from aspen.provenance.codec import get_varint, read_names
from aspen.provenance.varint import varint_array
from aspen.settings import Settings

LINKS = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("b", "e"), ("e", "f"), ("a", "f")]
SENSORS = {"s1": (0.0, 0.0), "s2": (10.0, 0.0), "s3": (20.0, 0.0), "s4": (30.0, 0.0)}


def _ingest(lake: Settings, records: list[dict], name: str) -> None:
    path = Path(lake.lake).parent / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest_files(lake, [path])


def _cold() -> None:
    """Forget the runtimes this process keeps: the next batch loads the stored state."""
    ml._WARM.clear()


def _strip_placement(lake: Settings) -> None:
    """Rewrite every stored engine state as an older Aspen wrote it: no placement."""
    table = DeltaTable(lake.table_uri(ENGINE_STATE)).to_pyarrow_table()
    states = []
    for data in table.column("state").to_pylist():
        payload = pickle.loads(data)
        payload.pop("placement", None)
        states.append(pickle.dumps(payload))
    table = table.set_column(table.schema.get_field_index("state"), "state",
                             pa.array(states, pa.binary()))
    write_deltalake(lake.table_uri(ENGINE_STATE), table, mode="overwrite")


def _above(encodings: list[bytes]) -> dict[str, set[str]]:
    """Variable → the variables of the nodes directly above it, over every stored node list."""
    above: dict[str, set[str]] = {}
    for data in encodings:
        names, pos = read_names(data, 1)
        count, pos = get_varint(data, pos)
        values = varint_array(data, pos, "test").tolist()
        for i in range(count):
            var, low, high = values[3 * i: 3 * i + 3]
            for child in (low, high):
                if child >= 2:
                    child_var = values[3 * (child - 2)]
                    above.setdefault(names[child_var], set()).add(names[var])
    return above


def test_an_arrival_order_state_migrates_once(tmp_path: Path) -> None:
    lake = Settings(lake=str(tmp_path / "lake"), variable_order="arrival")
    _ingest(lake, [{"op": "insert", "relation": "link", "src": s, "dst": d, "cost": 1.0}
                   for s, d in LINKS]
            + [{"op": "insert", "relation": "sensor", "id": s, "x": x, "y": y}
               for s, (x, y) in SENSORS.items()]
            + [{"op": "insert", "relation": "region_seed", "region": "r", "id": "s1"}]
            + [{"op": "insert", "relation": "triggered", "id": s} for s in SENSORS], "build")
    maintain_local(lake)
    _strip_placement(lake)
    _cold()
    lake = Settings(lake=lake.lake)  # the default order from now on
    _ingest(lake, [{"op": "delete", "relation": "link", "src": "b", "dst": "e"}], "one")
    migrated = maintain_local(lake)
    assert migrated.compacted  # every row rewritten in the placed order
    assert verify_lake(lake).ok
    # the stored node lists agree with one order: every node's variable above its children's
    for view in ("reachable", "active_region"):
        encodings = [bytes(p) for p in read_committed(lake, view)["provenance"]]
        graphlib.TopologicalSorter(_above(encodings)).prepare()  # raises CycleError if not
    _cold()
    _ingest(lake, [{"op": "delete", "relation": "triggered", "id": "s3"}], "two")
    after = maintain_local(lake)
    assert not after.compacted and after.relabelled == 0  # the migrated state was stored
    assert verify_lake(lake).ok
