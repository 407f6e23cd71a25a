"""Absorption provenance: BDD manager, variable registry, codec, explanations, variable order."""

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
from aspen.provenance.registry import VariableInfo, VariableRegistry

__all__ = [
    "IncrementalDfsLabeling",
    "ProvenanceManager",
    "VariableInfo",
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
    "what_if",
]
