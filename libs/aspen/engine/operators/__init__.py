"""The provenance-aware operators: one module each."""

from __future__ import annotations

from aspen.engine.operators.aggregate import GroupAggregate
from aspen.engine.operators.aggsel import Aggregate, AggSel
from aspen.engine.operators.base import FormulaCodec, Operator, is_retraction
from aspen.engine.operators.fixpoint import Fixpoint
from aspen.engine.operators.join import PipelinedHashJoin, no_window
from aspen.engine.operators.minship import MinShip
from aspen.engine.operators.store import ProvenanceStore

__all__ = [
    "AggSel",
    "Aggregate",
    "Fixpoint",
    "FormulaCodec",
    "GroupAggregate",
    "MinShip",
    "Operator",
    "PipelinedHashJoin",
    "ProvenanceStore",
    "is_retraction",
    "no_window",
]
