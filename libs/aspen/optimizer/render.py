"""Plan trees as text: one operator a line, children indented under their join.

>>> plan = {"join": "sort_merge", "key": "a.k=b.k",
...         "left": {"scan": "a"}, "right": {"scan": "b"}}
>>> print("\\n".join(plan_lines(plan, {"a": "t", "b": "u"})))
sort_merge on a.k=b.k
├─ scan a (t)
└─ scan b (u)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["plan_lines"]


def _label(plan: Mapping[str, Any], relations: Mapping[str, str]) -> str:
    if "scan" in plan:
        alias = str(plan["scan"])
        table = relations.get(alias)
        return f"scan {alias}" + (f" ({table})" if table and table != alias else "")
    key = plan.get("key")
    return str(plan["join"]) + (f" on {key}" if key else "")


def plan_lines(plan: Mapping[str, Any], relations: Mapping[str, str] | None = None) -> list[str]:
    """The plan tree (:func:`aspen.optimizer.cost.cost_of`'s form) as lines of text; scans name
    their table when ``relations`` (alias → table) is given."""
    relations = relations or {}
    lines = [_label(plan, relations)]
    children = [plan[side] for side in ("left", "right") if side in plan]
    for i, child in enumerate(children):
        last = i == len(children) - 1
        sub = plan_lines(child, relations)
        lines.append(("└─ " if last else "├─ ") + sub[0])
        lines.extend(("   " if last else "│  ") + line for line in sub[1:])
    return lines
