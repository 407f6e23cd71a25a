"""Per-node counters of the runtime: messages, tuples and provenance bytes shipped, state, time.

A *message* is one send on a channel between two different nodes (a shipped update, or one
variable-deletion notice of a broadcast); *tuples* counts the view/derived tuples among them;
*prov_bytes* is ``len(manager.encode(pv))`` of the shipped formulas (when measured). Deliveries to
the same node are counted apart (``local_deliveries``) and are not communication; ``coalesced``
counts INS merged into one already queued on the same channel (not shipped separately).

>>> m = RuntimeMetrics.for_nodes(2)
>>> m.nodes[0].messages += 3
>>> m.as_dict()["total"]["messages"]
3
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["NodeMetrics", "RuntimeMetrics"]


@dataclass
class NodeMetrics:
    """Counters of one node (sender side for communication)."""

    messages: int = 0
    tuples: int = 0
    prov_bytes: int = 0
    deletion_notices: int = 0
    local_deliveries: int = 0
    coalesced: int = 0
    processed: int = 0
    state_bytes: int = 0
    time_s: float = 0.0


@dataclass
class RuntimeMetrics:
    """Counters per node, and run-wide: batches, rounds of the timer, wall time."""

    nodes: list[NodeMetrics] = field(default_factory=list)
    batches: int = 0
    flush_rounds: int = 0
    wall_s: float = 0.0

    @classmethod
    def for_nodes(cls, partitions: int) -> RuntimeMetrics:
        return cls(nodes=[NodeMetrics() for _ in range(partitions)])

    def total(self) -> NodeMetrics:
        """Sum over nodes."""
        out = NodeMetrics()
        for node in self.nodes:
            for f in fields(NodeMetrics):
                setattr(out, f.name, getattr(out, f.name) + getattr(node, f.name))
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": [asdict(n) for n in self.nodes],
            "total": asdict(self.total()),
            "batches": self.batches,
            "flush_rounds": self.flush_rounds,
            "wall_s": self.wall_s,
        }

    def snapshot(self) -> RuntimeMetrics:
        """A copy (to compute what one batch cost)."""
        return RuntimeMetrics([NodeMetrics(**asdict(n)) for n in self.nodes], self.batches,
                              self.flush_rounds, self.wall_s)
