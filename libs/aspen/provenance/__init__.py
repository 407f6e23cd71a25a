"""Absorption provenance: BDD manager, variable registry, codec, explanations, variable orders
and their placement."""

from __future__ import annotations

from aspen.provenance.bdd import ProvenanceManager, decode, default_backend, encode
from aspen.provenance.explain import (
    build_var_index,
    critical_variables,
    minimal_witnesses,
    what_if,
)
from aspen.provenance.ordering import (
    IncrementalDfsLabeling,
    arrival_order,
    bfs_edge_order,
    dfs_edge_order,
    is_dfs_order,
    order_variables,
)
from aspen.provenance.placement import (
    DEFAULT_SENSOR_ORDER,
    SENSOR_ORDERS,
    VariablePlacement,
    sensor_field_order,
)
from aspen.provenance.registry import VariableInfo, VariableRegistry

__all__ = [
    "DEFAULT_SENSOR_ORDER",
    "IncrementalDfsLabeling",
    "ProvenanceManager",
    "SENSOR_ORDERS",
    "VariableInfo",
    "VariablePlacement",
    "VariableRegistry",
    "arrival_order",
    "bfs_edge_order",
    "build_var_index",
    "critical_variables",
    "decode",
    "default_backend",
    "dfs_edge_order",
    "encode",
    "is_dfs_order",
    "minimal_witnesses",
    "order_variables",
    "sensor_field_order",
    "what_if",
]
