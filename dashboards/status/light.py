"""The one red / amber / green light that sums the status up, with its reasons in plain words
(numbers and fixed words only, so safe as Markdown). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .expectations import ExpectationSummary
from .freshness import Backlog, Freshness
from .latency import Latency
from .thresholds import BACKLOG_AMBER_S, BACKLOG_RED_S, RECENT_HOURS
from .words import plural

__all__ = ["AMBER", "GREEN", "RED", "Light", "traffic_light"]


RED, AMBER, GREEN = "red", "amber", "green"


class Light(NamedTuple):
    """The overall status: ``red``, ``amber`` or ``green``, and its reasons in plain words."""

    colour: str
    reasons: tuple[str, ...]


def traffic_light(
    *,
    fresh: Freshness,
    waiting: Backlog,
    late: Latency,
    expectations: ExpectationSummary,
    new_quarantine: int = 0,
    stuck: Sequence[int] = (),
    unreadable: int = 0,
) -> Light:
    """Red, amber or green with the reasons, worst first.

    Red: a failed expectation, a batch that wrote its metrics but never committed
    (:func:`stuck_batches`), updates waiting longer than :data:`BACKLOG_RED_S`. Amber: no batch
    maintained yet, updates waiting longer than :data:`BACKLOG_AMBER_S`, a slow last batch
    (:func:`slow_batches`), expectations last checked before the last committed batch, records
    quarantined lately, a table that cannot be read. Green otherwise.

    >>> fresh = Freshness(3, 5, None, 42.0)
    >>> nothing, quick = Backlog((), 0, None, None), Latency(3, 1.0, False, 1.0, 1.0, 3, 1.0, ())
    >>> traffic_light(fresh=fresh, waiting=nothing, late=quick,
    ...               expectations=ExpectationSummary(5, 0, 0, 3))
    Light(colour='green', reasons=('views current as of maintained batch 3 (through ingest \
batch 5), committed 42 s ago; nothing waiting; all 5 expectations passed (maintained batch 3)',))
    >>> traffic_light(fresh=fresh, waiting=Backlog((6,), 4, None, 900.0), late=quick,
    ...               expectations=ExpectationSummary(5, 1, 5, 2), new_quarantine=2)
    Light(colour='red', reasons=('1 of 5 expectations failed (maintained batch 2)', '4 updates \
in 1 ingest batch waiting, the oldest for 15 min', 'the expectations were last checked on \
maintained batch 2; the views are at maintained batch 3', '2 records quarantined in the last \
24 h'))
    """
    red: list[str] = []
    amber: list[str] = []
    if expectations.failed:
        red.append(expectations.text())
    for batch in stuck:
        red.append(f"maintained batch {batch} wrote its metrics but never committed: it "
                   "failed before its commit (run the maintainer again)")
    if waiting.batches and waiting.age_s is not None:
        if waiting.age_s > BACKLOG_RED_S:
            red.append(f"{waiting.text()}: is the maintainer running?")
        elif waiting.age_s > BACKLOG_AMBER_S:
            amber.append(waiting.text())
    if fresh.batch is None:
        amber.append(fresh.text())
    if late.slow:
        amber.append(late.slow_text())
    if expectations.checked and fresh.batch is not None and expectations.stale:
        amber.append(f"the expectations were last checked on maintained batch "
                     f"{expectations.batch}; the views are at maintained batch {fresh.batch}")
    if new_quarantine:
        amber.append(f"{plural(new_quarantine, 'record')} quarantined in the last "
                     f"{RECENT_HOURS:g} h")
    if unreadable:
        amber.append(f"{plural(unreadable, 'table')} cannot be read (see Internals)")
    if red or amber:
        return Light(RED if red else AMBER, (*red, *amber))
    return Light(GREEN, ("; ".join([fresh.text(), waiting.text(), expectations.text()]),))
