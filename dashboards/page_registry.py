"""Every page of the console, in the order the navigation lists them: one entry a page (its
title, icon, file under ``pages/`` and order). ``app.py`` builds the navigation from
:data:`PAGES`; a new page is a file in ``pages/`` and one entry here.

>>> [page.title for page in PAGES][:3], default_page().module
(['Overview', 'Network', 'Quarantine'], 'overview')
>>> page_file(PAGES[1])
'pages/network.py'
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["PAGES", "PageEntry", "default_page", "page_file"]


class PageEntry(NamedTuple):
    """One page: its ``title`` in the navigation, its ``icon`` (an emoji or ``:material/…:``,
    ``None`` for none), its ``module`` (the file ``pages/<module>.py``) and its ``order`` (the
    smallest is the default page)."""

    title: str
    icon: str | None
    module: str
    order: int


#: Every page, by its order.
PAGES: tuple[PageEntry, ...] = tuple(sorted((
    PageEntry("Overview", None, "overview", 10),
    PageEntry("Network", None, "network", 20),
    PageEntry("Quarantine", None, "quarantine", 30),
    PageEntry("Why", None, "why", 40),
    PageEntry("What if", None, "what_if", 50),
    PageEntry("Ask (SQL)", None, "sql", 55),
    PageEntry("Views", None, "views", 60),
    PageEntry("Sensor readings", None, "sensors", 70),
    PageEntry("Stream networks", None, "networks", 80),
    PageEntry("Queries", None, "queries", 90),
    PageEntry("Pipeline health", None, "health", 100),
    PageEntry("Internals", None, "internals", 110),
), key=lambda page: page.order))


def page_file(page: PageEntry) -> str:
    """The page's file relative to the dashboard's folder (what ``st.page_link`` takes)."""
    return f"pages/{page.module}.py"


def default_page() -> PageEntry:
    """The page the console opens on: the one with the smallest order."""
    return PAGES[0]
