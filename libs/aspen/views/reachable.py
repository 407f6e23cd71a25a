"""Query 1, ``reachable(src, dst)``: link(x,y); link(x,z) ∧ reachable(z,y).

The plan of Liu et al. 2008, Fig. 4: links feed the Fixpoint (base case, at owner(src)) and are
re-partitioned on ``dst`` into the recursive join, where they meet ``reachable(z, y)`` at
owner(z); the join's output goes through MinShip to owner(x).

>>> from aspen.engine.plan import PlanChoices
>>> [op.name for op in reachable_fragment(PlanChoices()).ops]
['reachable.fix', 'reachable.join', 'reachable.ship']
"""

from __future__ import annotations

from aspen.baselines import oracles
from aspen.engine.plan import PlanChoices, RecursivePlan, ViewOutput
from aspen.views.fragment import Fragment
from aspen.views.spec import View

__all__ = ["VIEW", "reachable_plan", "reachable_fragment"]


def reachable_plan(choices: PlanChoices) -> RecursivePlan:
    """The recursive plan of ``reachable`` under ``choices``."""
    return RecursivePlan(
        view="reachable", base_relation="link", base_rule="link_to_reachable",
        step_relation="link", step_key=1, join_key=0, combine="reachable_step",
        ship=choices.ship, step_placement=choices.step_placement,
    )


def reachable_fragment(choices: PlanChoices) -> Fragment:
    """Operators, sources and reader of ``reachable``."""
    plan = reachable_plan(choices)
    frag = Fragment()
    frag.ops.extend(plan.compile())
    frag.add_source("link", plan.base_route(), plan.step_target)
    frag.outputs.append(ViewOutput("reachable", "fixpoint", (plan.fixpoint,)))
    return frag


def _fragment(views: set[str], choices: PlanChoices) -> Fragment:
    return reachable_fragment(choices)


VIEW = View("reachable", key=("src", "dst"), provenance=True, fragment=_fragment,
            oracle=oracles.reachable, title="Reachable pairs")
