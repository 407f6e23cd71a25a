"""Build operator instances from :class:`~aspen.engine.plan.OpSpec` data.

>>> from aspen.provenance import ProvenanceManager
>>> from aspen.engine.plan import OpSpec
>>> op = build_operator(OpSpec("r.fix", "fixpoint", (("relation", "r"),)),
...                     ProvenanceManager(backend="python"))
>>> op.kind
'fixpoint'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aspen.engine.operators import (
    AggSel,
    Fixpoint,
    GroupAggregate,
    MinShip,
    Operator,
    PipelinedHashJoin,
)
from aspen.engine.plan import OpSpec
from aspen.engine.rules import rule
from aspen.errors import EngineError
from aspen.provenance.bdd import ProvenanceManager

__all__ = ["build_operator", "resolve_rule"]


def resolve_rule(ref: Any) -> Callable[..., Any]:
    """A rule reference is a name, or (name, ((param, value), …))."""
    if isinstance(ref, str):
        return rule(ref)
    name, params = ref
    return rule(name, **dict(params))


def build_operator(spec: OpSpec, manager: ProvenanceManager, *, runtime: bool = False) -> Operator:
    """One operator instance for ``spec`` (``runtime``: joins skip derived-DEL cascades, since
    every node receives the variable deletions itself)."""
    p = dict(spec.params)
    if spec.kind == "fixpoint":
        return Fixpoint(manager, p["relation"])
    if spec.kind == "join":
        return PipelinedHashJoin(
            manager, p["relation"],
            left_key=resolve_rule(p["left_key"]), right_key=resolve_rule(p["right_key"]),
            combine=resolve_rule(p["combine"]),
            probe_left=resolve_rule(p["probe_left"]) if "probe_left" in p else None,
            probe_right=resolve_rule(p["probe_right"]) if "probe_right" in p else None,
            cascade_deletes=not runtime,
        )
    if spec.kind == "minship":
        return MinShip(manager, p.get("mode", "lazy"), p.get("batch_size"))
    if spec.kind == "aggsel":
        return AggSel(manager, p["group"], p["aggregates"], relation=p.get("relation"),
                      emit_retractions=p.get("emit_retractions", True))
    if spec.kind == "aggregate":
        return GroupAggregate(manager, p["relation"], p["group"], p["fn"], p.get("column", -1))
    raise EngineError(f"unknown operator kind {spec.kind!r} in plan")
