"""Plans are data: a view is a dataflow of named operators with its choices named.

Two levels, both frozen dataclasses:

* :class:`PlanChoices` — the knobs a cost-based optimizer turns (MinShip mode and batch size W,
  AggSel on/off/single, where the recursive join runs, the region distance k). Change them with
  :meth:`PlanChoices.with_choices`; ``aspen.views.build_dataflow(views, choices)`` compiles them.
* :class:`Dataflow` — the compiled operator graph: :class:`OpSpec` (an operator kind, its
  parameters as plain data, and :class:`Route` s saying where its output goes), :class:`SourceSpec`
  (where base facts enter) and :class:`ViewOutput` (how a view is read from operator state).
  A recursive view is described by a :class:`RecursivePlan` whose :meth:`RecursivePlan.compile`
  yields its Fixpoint / PipelinedHashJoin / MinShip (and AggSel) specs.

Routes: ``local`` (same node), ``owner`` (the node owning column ``attr`` of the tuple, hash
partitioning), ``broadcast`` (every node), ``node`` (node number ``attr``). A route may apply a
named map ``rule`` to the tuple first (rules live in :mod:`aspen.engine.rules`).

>>> c = PlanChoices()
>>> c.with_choices(mode="eager", batch_size=8).mode
'eager'
>>> p = RecursivePlan(view="reachable", base_relation="link", base_rule="link_to_reachable",
...                   step_relation="link", step_key=1, join_key=0, combine="reachable_step")
>>> [op.kind for op in p.compile()]
['fixpoint', 'join', 'minship']
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from aspen.engine.operators.aggsel import Aggregate
from aspen.errors import EngineError

__all__ = [
    "AggSelChoice",
    "Dataflow",
    "OpSpec",
    "PlanChoices",
    "RecursivePlan",
    "Route",
    "ShipChoice",
    "SourceSpec",
    "ViewOutput",
]

RouteKind = Literal["local", "owner", "broadcast", "node"]
Placement = Literal["repartition", "broadcast"]


@dataclass(frozen=True)
class Route:
    """Where an output goes: operator ``target``'s ``port`` on the node(s) chosen by ``by``."""

    target: str
    port: str = "in"
    by: RouteKind = "local"
    attr: int = 0
    rule: str | None = None
    rule_params: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class OpSpec:
    """One operator instance per node: kind, parameters (plain data) and output routes."""

    name: str
    kind: str
    params: tuple[tuple[str, Any], ...] = ()
    routes: tuple[Route, ...] = ()

    def param(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)

    def with_routes(self, *routes: Route) -> OpSpec:
        return replace(self, routes=self.routes + routes)


@dataclass(frozen=True)
class SourceSpec:
    """Base facts of ``relation`` enter at the node owning their first column, then ``routes``."""

    relation: str
    routes: tuple[Route, ...]


@dataclass(frozen=True)
class ViewOutput:
    """How view ``view`` is read: a ``reader`` over the state of operators ``ops``."""

    view: str
    reader: str
    ops: tuple[str, ...]
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)


@dataclass(frozen=True)
class Dataflow:
    """The compiled plan: operators (in a stable order), sources and view readers."""

    ops: tuple[OpSpec, ...]
    sources: tuple[SourceSpec, ...]
    outputs: tuple[ViewOutput, ...]
    choices: PlanChoices | None = None

    def op(self, name: str) -> OpSpec:
        for spec in self.ops:
            if spec.name == name:
                return spec
        raise EngineError(f"no operator {name!r} in this plan")


@dataclass(frozen=True)
class ShipChoice:
    """MinShip mode ("lazy" | "eager") and eager batch threshold W (None: timer only)."""

    mode: str = "lazy"
    batch_size: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("lazy", "eager"):
            raise EngineError(f"unknown MinShip mode {self.mode!r}; choose 'lazy' or 'eager'")
        if self.batch_size is not None and self.batch_size < 1:
            raise EngineError(f"MinShip batch size must be at least 1, not {self.batch_size}")


@dataclass(frozen=True)
class AggSelChoice:
    """AggSel inside the recursion: grouping columns, aggregates, and where it runs."""

    group: tuple[int, ...]
    aggregates: tuple[Aggregate, ...]
    at_receiver: bool = True  # in front of the Fixpoint (wraps B^Δ and R^Δ)
    at_sender: bool = True    # in front of MinShip (prunes before shipping)


@dataclass(frozen=True)
class RecursivePlan:
    """A linear recursive view ``V :- base ; V :- V ⋈ step`` with its physical choices.

    ``join_key`` is the view column joined with column ``step_key`` of the step relation; the
    view is partitioned on ``view_key``. ``step_placement`` says which side ships: "repartition"
    joins at the owner of the join value (the step relation, and the view if ``join_key !=
    view_key``, ship there); "broadcast" replicates the step relation on every node and joins where
    the view tuple lives.
    """

    view: str
    base_relation: str
    base_rule: str
    step_relation: str
    step_key: int
    join_key: int
    combine: str
    view_key: int = 0
    ship: ShipChoice = field(default_factory=ShipChoice)
    aggsel: AggSelChoice | None = None
    step_placement: Placement = "repartition"

    def with_choices(self, **changes: Any) -> RecursivePlan:
        """A copy with some choices changed (``dataclasses.replace``)."""
        return replace(self, **changes)

    @property
    def fixpoint(self) -> str:
        return f"{self.view}.fix"

    @property
    def entry(self) -> str:
        """The operator that receives base and recursive derivations."""
        if self.aggsel is not None and self.aggsel.at_receiver:
            return f"{self.view}.recv_aggsel"
        return self.fixpoint

    @property
    def step_target(self) -> Route:
        """The route of step-relation tuples into the join."""
        if self.step_placement == "broadcast":
            return Route(f"{self.view}.join", "right", "broadcast")
        return Route(f"{self.view}.join", "right", "owner", self.step_key)

    def base_route(self) -> Route:
        return Route(self.entry, "base", "owner", self.view_key, rule=self.base_rule)

    def compile(self, fixpoint_routes: tuple[Route, ...] = ()) -> tuple[OpSpec, ...]:
        """The operator specs of this view; ``fixpoint_routes`` feed operators on top."""
        if self.step_placement not in ("repartition", "broadcast"):
            raise EngineError(f"unknown step placement {self.step_placement!r}")
        v = self.view
        ops: list[OpSpec] = []
        if self.step_placement == "broadcast" or self.join_key == self.view_key:
            to_join = Route(f"{v}.join", "left", "local")
        else:
            to_join = Route(f"{v}.join", "left", "owner", self.join_key)
        agg = self.aggsel
        if agg is not None and agg.at_receiver:
            ops.append(OpSpec(
                self.entry, "aggsel",
                (("group", agg.group), ("aggregates", agg.aggregates), ("relation", v),
                 ("emit_retractions", True)),
                (Route(self.fixpoint, "in"),),
            ))
        ops.append(OpSpec(self.fixpoint, "fixpoint", (("relation", v),),
                          (to_join, *fixpoint_routes)))
        ship = f"{v}.ship"
        join_out = Route(ship, "in")
        if agg is not None and agg.at_sender:
            join_out = Route(f"{v}.send_aggsel", "in")
        ops.append(OpSpec(
            f"{v}.join", "join",
            (("relation", v), ("left_key", f"col:{self.join_key}"),
             ("right_key", f"col:{self.step_key}"), ("combine", self.combine)),
            (join_out,),
        ))
        if agg is not None and agg.at_sender:
            ops.append(OpSpec(
                f"{v}.send_aggsel", "aggsel",
                (("group", agg.group), ("aggregates", agg.aggregates), ("relation", v),
                 ("emit_retractions", False)),
                (Route(ship, "in"),),
            ))
        ops.append(OpSpec(
            ship, "minship",
            (("mode", self.ship.mode), ("batch_size", self.ship.batch_size)),
            (Route(self.entry, "rec", "owner", self.view_key),),
        ))
        return tuple(ops)


@dataclass(frozen=True)
class PlanChoices:
    """Every physical choice of the built-in views, named, with defaults.

    ``aggsel``: True (multi-aggregate selection: min cost and min hops), "single" (min cost only;
    hop-based views then cannot be built), False (no pruning: simple paths are enumerated).
    """

    mode: str = "lazy"
    batch_size: int | None = None
    aggsel: bool | str = True
    aggsel_at_sender: bool = True
    k: float = 20.0
    step_placement: Placement = "repartition"
    region_step_placement: Placement = "repartition"

    def __post_init__(self) -> None:
        ShipChoice(self.mode, self.batch_size)  # validates
        if self.aggsel not in (True, False, "single", "multi"):
            raise EngineError(f"aggsel must be True, False or 'single', not {self.aggsel!r}")
        if not self.k > 0:
            raise EngineError(f"the region distance k must be positive, not {self.k}")

    def with_choices(self, **changes: Any) -> PlanChoices:
        """A copy with some choices changed."""
        return replace(self, **changes)

    @property
    def ship(self) -> ShipChoice:
        return ShipChoice(self.mode, self.batch_size)
