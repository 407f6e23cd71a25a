"""A piece of a dataflow contributed by one view family; fragments merge into a Dataflow.

>>> f = Fragment()
>>> f.add_source("link", Route("x.fix", "base"))
>>> f.sources["link"][0].target
'x.fix'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aspen.engine.plan import OpSpec, Route, ViewOutput

__all__ = ["Fragment"]


@dataclass
class Fragment:
    """Operators, source routes and view readers, in insertion order."""

    ops: list[OpSpec] = field(default_factory=list)
    sources: dict[str, list[Route]] = field(default_factory=dict)
    outputs: list[ViewOutput] = field(default_factory=list)

    def add_source(self, relation: str, *routes: Route) -> None:
        bucket = self.sources.setdefault(relation, [])
        bucket.extend(r for r in routes if r not in bucket)

    def merge(self, other: Fragment) -> None:
        names = {op.name for op in self.ops}
        self.ops.extend(op for op in other.ops if op.name not in names)
        for relation, routes in other.sources.items():
            self.add_source(relation, *routes)
        self.outputs.extend(other.outputs)
