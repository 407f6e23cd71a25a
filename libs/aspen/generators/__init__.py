"""Generators of Aspen's inputs: transit-stub topologies, sensor grids and update workloads.

Everything is deterministic given a seed and returns plain data: dataclasses for topologies and
grids, lists of update-record dicts (docs/architecture.md, "Update records") for workloads.

>>> from aspen.generators import transit_stub, fraction_inserts
>>> len(fraction_inserts(transit_stub(seed=1), 1.0, seed=1))
400
"""

from __future__ import annotations

from aspen.generators.demo import DemoInputs, write_demo_inputs
from aspen.generators.invalid import INVALID_KINDS, inject_invalid, inject_invalid_labeled
from aspen.generators.sensors import RegionSeed, Sensor, SensorGrid, sensor_grid
from aspen.generators.topology import (
    Link,
    Node,
    Topology,
    TransitStubParams,
    scaled_params,
    transit_stub,
)
from aspen.generators.workloads import (
    ChurnParams,
    churn,
    delete_one_batches,
    fraction_batches,
    fraction_inserts,
    link_inserts,
    live_tuples,
    sensor_batches,
)
from aspen.generators.writers import write_csv, write_jsonl, write_records

__all__ = [
    "ChurnParams",
    "DemoInputs",
    "INVALID_KINDS",
    "Link",
    "Node",
    "RegionSeed",
    "Sensor",
    "SensorGrid",
    "Topology",
    "TransitStubParams",
    "churn",
    "delete_one_batches",
    "fraction_batches",
    "fraction_inserts",
    "inject_invalid",
    "inject_invalid_labeled",
    "link_inserts",
    "live_tuples",
    "scaled_params",
    "sensor_batches",
    "sensor_grid",
    "transit_stub",
    "write_csv",
    "write_demo_inputs",
    "write_jsonl",
    "write_records",
]
