"""The network's light: red when the network splits, amber when reachability dropped since the
previous maintained batch, green otherwise, with the reasons in plain words (numbers and fixed
words only, so safe as Markdown; the page names the routers through ``lakeview.text``). Pure.
"""

from __future__ import annotations

from typing import Protocol

from .light import AMBER, GREEN, RED, Light
from .words import plural

__all__ = ["MAX_NAMED", "network_light", "routers_text"]

#: Router ids a reason names before "and N more".
MAX_NAMED = 5


class _Health(Protocol):
    routers: tuple[str, ...]
    partitions: list[tuple[str, ...]]
    isolated: list[tuple[str, int | None]]
    reachable: int
    previous: int | None

    @property
    def split(self) -> bool: ...

    @property
    def change(self) -> int | None: ...

    def reachable_text(self) -> str: ...


def routers_text(routers: list[str], named: int = MAX_NAMED) -> str:
    """The first ``named`` routers and how many more.

    >>> routers_text(["a", "b", "c"], 2), routers_text(["a"])
    ('a, b and 1 more', 'a')
    """
    head = ", ".join(routers[:named])
    return head if len(routers) <= named else f"{head} and {len(routers) - named} more"


def network_light(health: _Health | None) -> Light:
    """Red when the routers that had links fall into more than one part (an isolated router is
    a part of its own), amber when fewer pairs are reachable than after the previous maintained
    batch, green otherwise.

    >>> from types import SimpleNamespace as H
    >>> ok = H(routers=("a", "b"), partitions=[("a", "b")], isolated=[], reachable=2,
    ...        previous=2, split=False, change=0, reachable_text=lambda: "2 of 2 pairs")
    >>> network_light(ok)
    Light(colour='green', reasons=('one network: 2 of 2 pairs; no change since the previous \
batch',))
    >>> cut = H(routers=("a", "b", "c"), partitions=[("a", "b"), ("c",)], isolated=[("c", 4)],
    ...         reachable=2, previous=6, split=True, change=-4, reachable_text=lambda: "2 of 2")
    >>> network_light(cut).colour, network_light(cut).reasons
    ('red', ('the network is split in 2 parts: the largest has 2 of 3 routers', '1 router \
isolated, on no live link', '4 pairs fewer reachable than after the previous batch'))
    """
    if health is None or not health.routers:
        return Light(AMBER, ("no link has been ingested yet: nothing to say about the network",))
    red: list[str] = []
    amber: list[str] = []
    if health.split:
        red.append(f"the network is split in {len(health.partitions)} parts: the largest has "
                   f"{len(health.partitions[0])} of {len(health.routers)} routers")
        if health.isolated:
            red.append(f"{plural(len(health.isolated), 'router')} isolated, on no live link")
    change = health.change
    if change is not None and change < 0:
        amber.append(f"{-change:,} pair{'' if change == -1 else 's'} fewer reachable than after "
                     "the previous batch")
    if red or amber:
        return Light(RED if red else AMBER, (*red, *amber))
    since = ("no earlier batch to compare with" if change is None else
             "no change since the previous batch" if change == 0 else
             f"{change:,} pair{'' if change == 1 else 's'} more than after the previous batch")
    return Light(GREEN, (f"one network: {health.reachable_text()}; {since}",))
